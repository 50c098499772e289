"""Traffic generators driven over SSH, as data plus runners: iperf3 flows (`iperf3`) and the
BitTorrent seeder/leecher/tracker (`bittorrent`). Commands are built by pure functions;
processes are started with `Session.spawn` and ended by their PID. May import parsers and
the base.
"""
