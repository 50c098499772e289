"""The controller's event-loop lag during a run (controller.run.looplag): the statistics (pure), the
warning, and the monitor on a real event loop held up on purpose.

Contract: the record's `controller_loop` gives the lag's median, 99th percentile and maximum over
the run and over the traffic window, with when the worst was; a lag above STALL_S inside the
traffic window is a stall, listed with its time and length, and makes one warning line that says
which times it affects (those ctl stamps itself) and which it does not (host-stamped samples).
"""
from __future__ import annotations

import asyncio
import time

import pytest

from controller.run.looplag import STALL_S, LoopLagMonitor, summarize, warning


def test_statistics_over_the_run_and_the_traffic_window():
    times = [100.0 + 0.1 * i for i in range(100)]
    lags = [0.001] * 100
    lags[50] = 0.7                         # a stall inside the window (t = 105.0)
    lags[5] = 0.4                          # and one before the traffic (t = 100.5)
    s = summarize(times, lags, (102.0, 108.0))
    assert s["all"]["samples"] == 100 and s["all"]["max_s"] == pytest.approx(0.7)
    assert s["all"]["worst_at"] == pytest.approx(105.0) and s["all"]["median_s"] == pytest.approx(0.001)
    # the window's samples: wake-ups from its start to one period after its end
    assert s["traffic"]["samples"] == sum(1 for t in times if 102.0 <= t <= 108.1)
    assert s["traffic"]["max_s"] == pytest.approx(0.7)
    assert s["stalls"] == [{"at": pytest.approx(104.3), "lag_s": 0.7}]   # when it should have woken
    line = warning(s)
    assert "1 time(s)" in line and "0.70 s" in line and "host-stamped samples are not affected" in line


def test_no_warning_without_a_stall_in_the_traffic():
    times = [float(i) for i in range(10)]
    lags = [0.0] * 10
    lags[1] = 5 * STALL_S                  # before the traffic: in `all`, not a stall of the traffic
    s = summarize(times, lags, (3.0, 9.0))
    assert s["stalls"] == [] and warning(s) is None and s["all"]["max_s"] == pytest.approx(5 * STALL_S)
    assert summarize(times, lags, None).get("stalls") is None


def test_no_samples():
    s = summarize([], [], (1.0, 2.0))
    assert s["all"] == {"samples": 0, "median_s": None, "p99_s": None, "max_s": None, "worst_at": None}
    assert warning(s) is None


def test_the_monitor_sees_a_loop_held_up():
    async def main() -> dict:
        mon = LoopLagMonitor(period_s=0.02)
        mon.start()
        await asyncio.sleep(0.1)
        t0 = time.time()
        time.sleep(0.4)                    # the loop is held up (as by a long computation in it)
        await asyncio.sleep(0.1)
        return await mon.stop((t0 - 0.2, time.time()))
    s = asyncio.run(main())
    assert s["traffic"]["max_s"] >= 0.3    # at least the hold-up, less the period it was asleep for
    assert s["stalls"] and max(x["lag_s"] for x in s["stalls"]) >= 0.3
