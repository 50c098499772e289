"""ping parser on real iputils output captured on the virtual rack (tests/fixtures/generated/ping)."""

import pytest

from controller.errors import ParseError
from controller.parsers import parse
from controller.parsers.ping import parse as parse_ping
from tests.support.shipped import TESTS

D = TESTS / "fixtures" / "generated" / "ping"


def test_replies_and_summary():
    r = parse_ping((D / "ping_c5_i0.2_25ms_each_way.txt").read_text())
    assert r.destination == "10.2.0.21" and (r.transmitted, r.received, r.loss_percent) == (5, 5, 0.0)
    assert r.replies == tuple((i, 50.2) for i in range(1, 6))
    assert (r.rtt_min_ms, r.rtt_avg_ms, r.rtt_max_ms, r.rtt_mdev_ms) == (50.187, 50.201, 50.223, 0.013)
    assert r.jitter_ms == 0.0


def test_cold_neighbour_outlier_moves_the_average_not_the_median():
    # Why `ctl link measure` sends a warm-up ping: ARP resolution crosses the delayed link.
    r = parse_ping((D / "ping_c5_i0.2_50ms_each_way_cold_neighbours.txt").read_text())
    assert r.replies == ((1, 201.0), (2, 100.0), (3, 100.0), (4, 100.0), (5, 100.0))
    assert (r.rtt_min_ms, r.rtt_avg_ms, r.rtt_max_ms) == (100.258, 120.331, 200.574)
    assert r.jitter_ms == pytest.approx(101 / 4)


def test_quiet_has_statistics_without_replies():
    r = parse_ping((D / "ping_quiet.txt").read_text())
    assert r.replies == () and r.received == 4 and r.rtt_avg_ms == 50.224 and r.jitter_ms is None


def test_total_loss_has_no_rtt():
    r = parse_ping((D / "ping_unreachable.txt").read_text())
    assert (r.transmitted, r.received, r.loss_percent) == (3, 0, 100.0)
    assert r.rtt_avg_ms is None


def test_registry_and_errors():
    assert parse("ping", (D / "ping_quiet.txt").read_text())["rtt_mdev_ms"] == 0.023
    with pytest.raises(ParseError):
        parse_ping((D / "ping_version.txt").read_text())
