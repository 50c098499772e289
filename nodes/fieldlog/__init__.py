"""The field logger: runs ON a modem host (bus, subway, static) and keeps logging with no controller.

Process model
    `ctl field start` ships this package as one zip file (`fieldlog-<sha12>.pyz`, run by the host's own
    python3) and runs `python3 fieldlog.pyz start ...` over SSH. That command double-forks a daemon
    (setsid: no controlling terminal, no SSH channel held open), waits until the daemon holds the host's
    logger lock and has written its PID file, prints one JSON line and returns. The daemon lives until
    the run's duration is over or it receives SIGTERM (`ctl field stop`, which ends it by the PID in the
    PID file after checking the PID still names the same process).

    One logger per host: an flock on `<root>/lock`, released by the kernel however the logger dies.
    A logger started while a run is unfinished (killed, host rebooted) RESUMES that run: same run id,
    same spool, sample numbers continue on the run's wall-clock grid (see schedule.py), and the gap is
    recorded as an event.

Once a second (tick k due at start + k s, host wall clock) it takes: the modem's radio counters through
the family table (nodes.modem.families: serial AT, mmcli, qmicli, wimaxcu), GPS from gpsd TPV reports,
the uplink's interface byte counters, RTT and jitter to a reference host (ping), and the workload's
progress (iperf3 download rate, or webtorrent-cli's rate and connected/active peers). Handover events
are detected on the host from the radio series (nodes.modem.handover).

Store and forward: see spool.py (durable per-run spool, fsync policy) and influx.py (exactly-once
push by acknowledged byte offset; InfluxDB de-duplicates identical points).

Stdlib only: this runs under the host's bare /usr/bin/python3, which must be >= 3.9 (nodes.modem uses
built-in generics at run time; checked by `ctl field start`, tested with 3.9 and 3.11).
"""
