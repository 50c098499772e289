"""The field logger's own parsers (nodes/fieldlog/parsers.py: ping, iperf3, webtorrent-cli, /proc/net/dev)
take a number only when the quantity can be it (issue 23): 1e999, 400 digits, "1.2.3" or a unit no tool
prints make the line unread (it stays in the raw log), never an infinity in the spool or a traceback.
Real lines (tests/fixtures/recorded) still read as before: test_field_logger.py."""
from __future__ import annotations

import json
import math

import pytest

from nodes.fieldlog import parsers

PING = "[1795000000.123456] 64 bytes from 10.0.0.2: icmp_seq=7 ttl=64 time={} ms"
IPERF = "[  5]   1.00-2.00   sec  {} KBytes  {} Kbits/sec"
NETDEV = ("Inter-|   Receive                                                |  Transmit\n"
          " face |bytes    packets errs drop fifo frame compressed multicast|bytes    packets errs drop fifo colls "
          "carrier compressed\n  wwan0: {} 10 0 0 0 0 0 0 2000 20 0 0 0 0 0 0\n")
ABSURD = ["9" * 400, "1e999", "1.2.3", "inf", "nan", "99999999999999999999999"]


def test_real_values_read():
    assert parsers.parse_ping_line(PING.format("50.2")) == ("reply", 1795000000.123456, 50.2)
    assert parsers.parse_iperf3_interval(IPERF.format("122", "1000")) == {
        "start": 1.0, "end": 2.0, "bytes": 122 * 1024.0, "bps": 1e6}
    assert parsers.parse_netdev(NETDEV.format("1000"), "wwan0")["rx_bytes"] == 1000


@pytest.mark.parametrize("bad", ABSURD)
def test_absurd_numbers_make_the_line_unread(bad):
    assert parsers.parse_ping_line(PING.format(bad)) is None
    assert parsers.parse_iperf3_interval(IPERF.format(bad, "1000")) is None
    assert parsers.parse_iperf3_interval(IPERF.format("122", bad)) is None
    assert parsers.parse_netdev(NETDEV.format(bad), "wwan0") is None
    frames = parsers.WebtorrentFrames()
    for line in ["Downloading: x", f"Speed: {bad} MB/s Downloaded: 1.0 MB/2.0 MB Uploaded: 0 B",
                 "Running time: 1 second  Time remaining: 2 seconds  Peers: 1/" + bad, " " * 60]:
        out = frames.feed(line)
        assert out is None or all(not isinstance(v, float) or math.isfinite(v) for v in out.values())
    json.dumps(frames.done, allow_nan=False)


def test_a_size_unit_no_webtorrent_prints_is_not_read():
    with pytest.raises(ValueError):
        parsers.pretty_bytes("1.0 EB")
    with pytest.raises(ValueError):
        parsers.pretty_bytes("1" + "0" * 30 + " B")
    assert parsers.pretty_bytes("1.9 MB") == 1.9e6
