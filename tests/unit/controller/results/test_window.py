"""`START:END` windows of a run's traffic (controller/results/window.py, pure).

Contract: durations from the traffic's start; an empty START is 0, an empty END the traffic's
end; a bad window is a ParameterError (exit 2) that says how long the traffic lasted; a Span
keeps its sampling slack only at the traffic window's own ends.
"""
from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from controller.errors import ParameterError, UsageError
from controller.results.window import Span, TrafficWindow, parse_window, window_definitions, window_of, window_title


@pytest.mark.parametrize("text, start, end", [
    ("45s:600s", 45.0, 600.0),
    (":45s", 0.0, 45.0),
    ("300s:", 300.0, 601.25),
    ("0:10m", 0.0, 600.0),
    (" 1.5min : 9m ", 90.0, 540.0),
    ("500ms:2s", 0.5, 2.0),
    (":", 0.0, 601.25),
    ("0:601.25s", 0.0, 601.25),
])
def test_windows_in_duration_units(text, start, end):
    w = parse_window(text, 601.25)
    assert (w.start_s, w.end_s, w.traffic_s) == pytest.approx((start, end, 601.25))
    assert w.whole is (start == 0.0 and end == 601.25)
    assert w.to_json() == {"start_s": round(start, 3), "end_s": round(end, 3), "traffic_s": 601.25, "of": "traffic"}


@pytest.mark.parametrize("text, message", [
    ("45s:30s", "--window: END 30 s is not after START 45 s (the run's traffic lasted 601.250 s)"),
    ("45s:45s", "--window: END 45 s is not after START 45 s"),
    ("0:700s", "--window: END 700 s is beyond the run's traffic (the run's traffic lasted 601.250 s; `0:` runs to "
               "its end)"),
    ("602s:", "--window: START 602 s is beyond the run's traffic (the run's traffic lasted 601.250 s)"),
    ("soon:10s", "--window START: 'soon' is not a duration"),
    ("0:10 parsecs", "--window END: unknown unit 'parsecs'"),
    ("-5s:10s", "--window START: '-5s' is not a duration"),
    ("45s", "--window: '45s' is not START:END (durations from the traffic's start, e.g. 45s:600s, :45s, 300s:; "
            "the run's traffic lasted 601.250 s)"),
    ("1s:2s:3s", "is not START:END"),
    ("", "is not START:END"),
])
def test_bad_windows_are_parameter_errors_naming_the_traffic_length(text, message):
    with pytest.raises(ParameterError) as e:
        parse_window(text, 601.25)
    line = e.value.one_line()
    assert message in line and "\n" not in line
    assert "601.250 s" in line
    assert isinstance(e.value, UsageError) and e.value.exit_code == 2


def test_a_run_without_traffic_has_no_window():
    with pytest.raises(ParameterError, match="no traffic window"):
        parse_window("0:1s", 0.0)


def test_a_long_input_is_cut_in_the_message():
    with pytest.raises(ParameterError) as e:
        parse_window("x" * 5000, 10.0)
    assert len(e.value.one_line()) < 300


def test_window_of_seconds():
    assert window_of((None, 45), 600.0) == TrafficWindow(0.0, 45.0, 600.0)
    assert window_of((300, None), 600.0) == TrafficWindow(300.0, 600.0, 600.0)
    with pytest.raises(ParameterError, match="END 700 s is beyond"):
        window_of((0, 700), 600.0)


@given(st.integers(0, 10_000), st.integers(1, 10_000), st.integers(0, 5_000))
def test_any_window_inside_the_traffic_reads_back(a_ms, len_ms, rest_ms):
    traffic = (a_ms + len_ms + rest_ms) / 1000
    w = parse_window(f"{a_ms}ms:{a_ms + len_ms}ms", traffic)
    assert (w.start_s, w.end_s) == pytest.approx((a_ms / 1000, (a_ms + len_ms) / 1000))
    assert w.seconds == pytest.approx(len_ms / 1000)


def test_span_slack_only_at_the_traffic_windows_own_ends():
    traffic = (1000.0, 1600.0)
    whole = Span.of(traffic)
    assert whole.whole and whole.bounds == traffic and whole.slack(0.5) == (0.5, 0.5) and whole.to_json() is None
    first = Span.of(traffic, TrafficWindow(0.0, 45.0, 600.0))
    assert first.bounds == (1000.0, 1045.0) and first.slack(0.5) == (0.5, 0.0) and not first.whole
    middle = Span.of(traffic, TrafficWindow(45.0, 300.0, 600.0))
    assert middle.slack(0.5) == (0.0, 0.0) and middle.seconds == 255.0
    last = Span.of(traffic, TrafficWindow(300.0, 600.0, 600.0))
    assert last.slack(0.5) == (0.0, 0.5)
    # The whole traffic given as a window: the run's own sources, and the summary says so.
    explicit = Span.of(traffic, TrafficWindow(0.0, 600.0, 600.0))
    assert explicit.whole and explicit.to_json() == {"start_s": 0.0, "end_s": 600.0, "traffic_s": 600.0,
                                                     "of": "traffic"}


def test_definitions_and_title_of_a_windowed_summary():
    traffic = (1000.0, 1600.0)
    assert window_definitions(Span.of(traffic)) == {}
    d = window_definitions(Span.of(traffic, TrafficWindow(45.0, 600.0, 600.0)), whole_run=("sender_counters",))
    assert d["window"].startswith("every number is over seconds 45 to 600 of the traffic window (600.000 s")
    assert d["window"].endswith("except, over the whole run: sender_counters")
    assert window_title({"window": {"start_s": 45.0, "end_s": 600.0, "traffic_s": 600.0}}) == \
        "  window 45-600 s of 600.0 s of traffic"
    assert window_title({}) == ""
