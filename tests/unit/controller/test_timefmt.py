"""Every time ctl shows a person is ISO 8601 with its zone (controller.timefmt), and the texts
that used to print local times without one (a campaign's wait reasons, the rack lock's holder,
a campaign's ETA) now carry it."""
from __future__ import annotations

import re
import time

import pytest

from controller import timefmt

# A date and a time of day, and what follows it.
_DATE_TIME = re.compile(r"\d{4}-\d\d-\d\d[T ]\d\d:\d\d(?::\d\d(?:\.\d+)?)?(?P<zone>Z|[+-]\d\d:?\d\d)?")


def naive_date_times(text: str) -> list[str]:
    """Date-times in `text` without a zone (a time of day alone, as a window's 22:00-07:00, is not one)."""
    return [m.group(0) for m in _DATE_TIME.finditer(text) if not m.group("zone")]


@pytest.fixture
def zone(monkeypatch):
    """The process's local zone set to UTC+05:30 (POSIX TZ), restored after the test."""
    monkeypatch.setenv("TZ", "XST-5:30")
    time.tzset()
    yield "+05:30"
    monkeypatch.undo()
    time.tzset()


T = 1_794_995_200.0             # 2026-11-18T09:46:40Z


def test_local_time_with_its_offset(zone):
    assert timefmt.iso_local(T) == "2026-11-18T15:16:40+05:30"
    assert timefmt.iso_local(T, "minutes") == "2026-11-18T15:16+05:30"
    assert timefmt.iso_utc(T) == "2026-11-18T09:46:40Z"
    assert timefmt.iso_span(T, T + 3600) == "2026-11-18T15:16+05:30 to 2026-11-18T16:16+05:30"


@pytest.mark.parametrize("bad", [None, 0, -5.0, float("nan"), float("inf"), True, "2026", 1e300])
def test_no_time_or_a_bad_one_is_said_not_guessed(bad):
    assert timefmt.iso_local(bad) == "?"
    assert timefmt.iso_utc(bad) == "-"
    with pytest.raises(ValueError):
        timefmt.iso_local(T, "hours")


def test_the_naive_date_time_finder():
    assert naive_date_times("estimated finish: 2026-11-26 21:01 if started now") == ["2026-11-26 21:01"]
    assert naive_date_times("since 2026-11-26T21:01:07+01:00; at 2026-11-26T20:01:07Z, window 22:00-07:00") == []


def test_campaign_wait_reasons_carry_the_zone(zone):
    from controller.campaign.policy import Busy, RunView, next_step
    from controller.campaign.timing import Window
    args = dict(window=None, pause_s=0.0, last_finished=None, overhead_s=10.0)
    pending = [RunView(1, "pending", None, 60.0)]
    s = next_step("queued", T + 600, pending, T, **args)
    assert s.why == "starts at 2026-11-18T15:26+05:30"
    s = next_step("running", None, [RunView(1, "pending", T + 90, 60.0)], T, **args)
    assert s.why == "retry wait until 2026-11-18T15:18:10+05:30"
    s = next_step("running", None, pending, T, **{**args, "window": Window(22 * 60, 7 * 60)})
    assert s.why == "outside the window 22:00-07:00 (opens 2026-11-18T22:00+05:30)"
    b = Busy(T - 60, T + 3600, "alice@m1", "calibration")
    assert b.text() == "reserved by alice@m1 from 2026-11-18T15:15+05:30 to 2026-11-18T16:16+05:30 (calibration)"
    s = next_step("running", None, pending, T, **args, busy=[b])
    assert s.why.startswith("the rack is reserved by alice@m1 from 2026-11-18T15:15+05:30") and not \
        naive_date_times(s.why)


def test_a_campaign_progress_line_eta_carries_the_zone(zone):
    from types import SimpleNamespace

    from controller.cli.campaign import progress_line
    c = SimpleNamespace(num=3, name="sweep", state="running")
    p = SimpleNamespace(done=2, failed=0, total=8, finish_at=T + 7200, eta_s=7200.0)
    line = progress_line(c, p)
    assert "ETA 2026-11-18T17:16+05:30 (in 2h" in line and not naive_date_times(line)
