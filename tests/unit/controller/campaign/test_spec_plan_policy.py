"""Campaign core without a rack: the file model, expansion, order, windows, ETA,
failure classification, retry decisions and the scheduler's next step."""
from __future__ import annotations

import datetime as dt
import textwrap
from pathlib import Path

import pytest

from controller.campaign.plan import case_argv, expand_cases, order_runs, validate_cases
from controller.campaign.policy import RunView, classify, decide, next_step
from controller.campaign.spec import ALL_CLASSES, CampaignFileError, RetryPolicy, load_campaign
from controller.campaign.timing import Window, estimate_finish, format_span, learned_overhead, parse_at, parse_window, progress_bar
from controller.errors import CommandFailed, SSHError, TrafficError, VerifyError
from controller.inventory import load_inventory
from tests.support.shipped import ROOT as PROJECT

CAMPAIGNS = PROJECT / "campaigns"


def write(tmp_path: Path, text: str, name: str = "c.yaml") -> Path:
    p = tmp_path / name
    p.write_text(textwrap.dedent(text).lstrip())
    return p


@pytest.fixture(scope="module")
def inv(tmp_path_factory):
    # The shipped inventory names its token file under ${CTL_STATE_DIR}: give it one (nothing is read).
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CTL_STATE_DIR", str(tmp_path_factory.mktemp("state")))
        yield load_inventory(PROJECT / "inventory" / "virtual.yaml")


# ---- the shipped campaign files ---------------------------------------------------------------

def test_every_shipped_campaign_file_loads_and_expands(inv):
    files = sorted(CAMPAIGNS.glob("*.yaml"))
    assert {f.name for f in files} >= {"rtt-loss-sweep.yaml", "rtt-loss-sweep-short.yaml",
                                       "distinct-bottleneck-link2.yaml", "mcubic-table1.yaml",
                                       "mcubic-table2.yaml", "mcubic-table3.yaml"}
    from controller import scenarios
    for f in files:
        spec, lines, _ = load_campaign(f)
        cases = expand_cases(spec)
        assert len(order_runs(len(cases), spec.repetitions, spec.order, 1)) == len(cases) * spec.repetitions
        if spec.scenario in scenarios.available():
            # the scenario's own parser and planner accept every case on the shipped virtual rack
            assert len(validate_cases(spec, f, lines, inv)) == len(cases)


def test_the_mcubic_tables_sweep_the_papers_columns_and_all_five_algorithms():
    from controller.reproduce.papers import TABLE1
    from controller.scenarios.shared_bottleneck import TABLE2, TABLE3
    from nodes.congestion.catalog import ALGORITHMS, paper_algorithms
    # the MPTCP papers' coupled algorithms (the variants are for analysis only; bbr3 is the BBRv3 paper's)
    want_cc = {n for n in paper_algorithms() if ALGORITHMS[n].coupled} | {"cubic"}
    for name, key, columns in (("mcubic-table1.yaml", "link2", TABLE1["columns"]),
                               ("mcubic-table2.yaml", "delay", TABLE2["columns"]),
                               ("mcubic-table3.yaml", "delay2", [c.split(":")[1] for c in TABLE3["columns"]])):
        spec, _, _ = load_campaign(CAMPAIGNS / name)
        cases = expand_cases(spec)
        assert {c.varied["cc"] for c in cases} == want_cc, name
        assert [str(v) for v in dict.fromkeys(c.varied[key] for c in cases)] == list(columns), name
        assert spec.fixed["tcp-cc"] == "cubic", name                     # the single-path flows stay on Cubic
        assert spec.repetitions >= 3, name                                # a confidence interval per cell


def test_the_overnight_sweep_is_600_runs_of_60_s():
    spec, _, _ = load_campaign(CAMPAIGNS / "rtt-loss-sweep.yaml")
    cases = expand_cases(spec)
    assert len(cases) == 6 * 5 * 2 and spec.repetitions == 10
    assert {c.values["duration"] for c in cases} == {"60s"}
    assert {c.varied["loss"] for c in cases} == {"0%", "0.0046%", "0.01%", "0.025%", "0.1%"}
    # the paper's «BBRv3, Cubic»: ctl's bbr3, never the kernel's bbr (BBRv1 upstream)
    assert {c.varied["cc"] for c in cases} == {"bbr3", "cubic"}
    short, _, _ = load_campaign(CAMPAIGNS / "rtt-loss-sweep-short.yaml")
    assert len(expand_cases(short)) * short.repetitions == 16
    assert {c.varied["cc"] for c in expand_cases(short)} == {"bbr3", "cubic"}


def test_shipped_rtt_loss_sweeps_validate_against_the_scenario(inv):
    for name in ("rtt-loss-sweep.yaml", "rtt-loss-sweep-short.yaml"):
        f = CAMPAIGNS / name
        spec, lines, _ = load_campaign(f)
        validate_cases(spec, f, lines, inv)  # every case through the scenario's parse_args and plan


def test_unknown_scenario_is_refused_with_file_and_line(inv, tmp_path):
    f = tmp_path / "c.yaml"
    f.write_text((CAMPAIGNS / "rtt-loss-sweep-short.yaml").read_text().replace(
        "scenario: rtt-loss-sweep", "scenario: no-such-scenario"))
    spec, lines, _ = load_campaign(f)
    with pytest.raises(CampaignFileError, match=r"c.yaml:\d+: scenario: unknown scenario 'no-such-scenario'"):
        validate_cases(spec, f, lines, inv)


# ---- strict file: errors name file, line and field ----------------------------------------------

@pytest.mark.parametrize("body, message", [
    ("""
     version: 1
     scenario: distinct-bottleneck
     sweep: {link2: [10M]}
     repetitons: 3
     """, r"c.yaml:4: repetitons: unknown field \(typo\?\)"),
    ("""
     version: 1
     scenario: distinct-bottleneck
     sweep: {link2: [10M]}
     cases: [{link2: 20M}]
     """, "either `sweep`"),
    ("""
     version: 1
     scenario: distinct-bottleneck
     sweep:
       link2: [10M, 10M]
     """, r"c.yaml:3: sweep: .*link2: a value is listed twice"),
    ("""
     version: 1
     scenario: distinct-bottleneck
     fixed: {link2: 10M}
     sweep: {link2: [20M]}
     """, "both fixed and swept"),
    ("""
     version: 1
     scenario: distinct-bottleneck
     fixed:
       cc: yes
     """, r"c.yaml:4: fixed.cc: .*not a parameter value"),
    ("""
     version: 1
     scenario: distinct-bottleneck
     window: "22:00-25:00"
     """, r"c.yaml:3: window: .*'25:00' is not a time of day"),
    ("""
     version: 1
     scenario: distinct-bottleneck
     retry:
       traffic-error: {attempts: 0}
     """, r"c.yaml:4: retry.traffic-error.attempts: 0: must be at least 1"),
    ("""
     version: 1
     scenario: distinct-bottleneck
     retry:
       host_unreachable: {attempts: 2}
     """, r"retry.host_unreachable: unknown field"),
    ("""
     version: 1
     scenario: distinct-bottleneck
     pause: 5 parsecs
     """, r"c.yaml:3: pause: unknown unit 'parsecs'"),
])
def test_file_errors_name_file_line_and_field(tmp_path, body, message):
    with pytest.raises(CampaignFileError, match=message):
        load_campaign(write(tmp_path, body))


@pytest.mark.parametrize("body, message", [
    ("""
     version: 1
     scenario: distinct-bottleneck
     sweep:
       link2: [10M, 20M]
       linc1: [100M]
     """, r"c.yaml:5: sweep.linc1: distinct-bottleneck has no parameter 'linc1'"),
    ("""
     version: 1
     scenario: distinct-bottleneck
     cases:
       - {link2: 10M}
       - {link2: -5M}
     """, r"c.yaml:5: case 2 \(link2=-5M\): --link2: '-5M' must be a positive rate"),
    ("""
     version: 1
     scenario: no-such-thing
     """, r"c.yaml:2: scenario: unknown scenario 'no-such-thing'"),
    ("""
     version: 1
     scenario: distinct-bottleneck
     fixed: {duration: 2h}
     window: "22:00-23:00"
     """, r"c.yaml:4: window: a run of case 1 takes about 2h 00m, longer than the window"),
    ("""
     version: 1
     scenario: distinct-bottleneck
     sweep: {link2: [10M, 20M], cc: [cubic, reno]}
     report:
       heatmap: {x: rtt, y: link2}
     """, r"c.yaml:5: report.heatmap.x: 'rtt' is not a swept parameter"),
])
def test_cases_are_validated_by_the_scenario_itself(tmp_path, inv, body, message):
    f = write(tmp_path, body)
    spec, lines, _ = load_campaign(f)
    with pytest.raises(CampaignFileError, match=message):
        validate_cases(spec, f, lines, inv)


def test_name_defaults_to_the_file_stem_and_yaml_numbers_become_text(tmp_path):
    spec, _, _ = load_campaign(write(tmp_path, """
        version: 1
        scenario: distinct-bottleneck
        fixed: {duration: 5, queue: 50}
        """, name="My Sweep.yaml"))
    assert spec.name == "my-sweep"
    assert expand_cases(spec)[0].values == {"duration": "5", "queue": "50"}


# ---- expansion and order -----------------------------------------------------------------------

def _spec(tmp_path, body):
    return load_campaign(write(tmp_path, body))[0]


def test_cross_product_in_file_order_with_fixed_values_and_argv(tmp_path):
    spec = _spec(tmp_path, """
        version: 1
        scenario: distinct-bottleneck
        fixed: {duration: 5s, tcp-cc: cubic}
        sweep:
          link2: [10M, 20M]
          cc: [cubic, reno, bbr]
        """)
    cases = expand_cases(spec)
    assert [c.varied for c in cases][:4] == [{"link2": "10M", "cc": "cubic"}, {"link2": "10M", "cc": "reno"},
                                             {"link2": "10M", "cc": "bbr"}, {"link2": "20M", "cc": "cubic"}]
    assert len(cases) == 6
    assert cases[0].argv() == ["--duration", "5s", "--tcp-cc", "cubic", "--link2", "10M", "--cc", "cubic"]
    assert case_argv({"tcp_cc": "x y"}) == ["--tcp-cc", "x y"]  # a value is one argv element, never split


def test_explicit_cases(tmp_path):
    spec = _spec(tmp_path, """
        version: 1
        scenario: distinct-bottleneck
        fixed: {duration: 5s}
        cases:
          - {link2: 10M, cc: cubic}
          - {link2: 50M}
        repetitions: 3
        """)
    cases = expand_cases(spec)
    assert [c.values for c in cases] == [{"duration": "5s", "link2": "10M", "cc": "cubic"},
                                         {"duration": "5s", "link2": "50M"}]


def test_sequential_order_is_case_by_case():
    runs = order_runs(3, 2, "sequential", None)
    assert [(r.seq, r.case, r.repetition) for r in runs] == [(1, 0, 1), (2, 0, 2), (3, 1, 1), (4, 1, 2),
                                                              (5, 2, 1), (6, 2, 2)]


def test_random_order_is_a_reproducible_permutation():
    a = order_runs(60, 10, "random", 1234)
    b = order_runs(60, 10, "random", 1234)
    c = order_runs(60, 10, "random", 1235)
    assert [(r.case, r.repetition) for r in a] == [(r.case, r.repetition) for r in b]
    assert [(r.case, r.repetition) for r in a] != [(r.case, r.repetition) for r in c]
    assert sorted((r.case, r.repetition) for r in a) == [(c_, r_) for c_ in range(60) for r_ in range(1, 11)]
    assert [r.seq for r in a] == list(range(1, 601))
    # pinned: the recorded seed must reproduce the same order on any later Python
    assert [(r.case, r.repetition) for r in order_runs(3, 2, "random", 7)] == \
        [(r.case, r.repetition) for r in order_runs(3, 2, "random", 7)]
    with pytest.raises(ValueError):
        order_runs(2, 2, "random", None)


# ---- windows -----------------------------------------------------------------------------------

def T(text: str) -> dt.datetime:
    return dt.datetime.fromisoformat(text)


def test_window_across_midnight():
    w = parse_window("22:00-07:00")
    assert w.length_s == 9 * 3600
    assert w.current(T("2026-11-22 23:30")) == (T("2026-11-22 22:00"), T("2026-11-23 07:00"))
    assert w.current(T("2026-11-23 03:00")) == (T("2026-11-22 22:00"), T("2026-11-23 07:00"))
    assert w.current(T("2026-11-23 07:00")) is None  # end exclusive
    assert w.current(T("2026-11-23 12:00")) is None
    assert w.next_open(T("2026-11-23 12:00")) == T("2026-11-23 22:00")
    assert w.text() == "22:00-07:00"


def test_a_run_starts_only_if_it_ends_inside_the_window():
    w = parse_window("22:00-07:00")
    assert w.start_for(T("2026-11-23 06:58"), 60) == T("2026-11-23 06:58")
    assert w.start_for(T("2026-11-23 06:59:30"), 60) == T("2026-11-23 22:00")
    assert w.start_for(T("2026-11-23 15:00"), 60) == T("2026-11-23 22:00")
    # daytime window
    d = parse_window("09:00-17:00")
    assert d.start_for(T("2026-11-23 08:00"), 60) == T("2026-11-23 09:00")
    assert d.start_for(T("2026-11-23 18:00"), 60) == T("2026-11-24 09:00")


@pytest.mark.parametrize("text", ["22:00", "22-07", "22:00-22:00", "7:60-8:00", "a-b"])
def test_bad_windows(text):
    with pytest.raises(ValueError):
        parse_window(text)


def test_parse_at():
    now = T("2026-11-22 20:00").timestamp()
    assert parse_at("22:00", now) == T("2026-11-22 22:00").timestamp()
    assert parse_at("19:00", now) == T("2026-11-23 19:00").timestamp()
    assert parse_at("2026-12-01T08:30", now) == T("2026-12-01 08:30").timestamp()
    from controller.errors import ParameterError
    with pytest.raises(ParameterError, match="--at"):
        parse_at("tonight", now)


# ---- estimates ---------------------------------------------------------------------------------

def test_estimate_without_window_is_runs_plus_pauses():
    assert estimate_finish(1000.0, [80.0] * 600, 5.0, None) == 1000.0 + 600 * 80 + 599 * 5


def test_estimate_waits_for_the_window():
    w = parse_window("22:00-07:00")
    now = T("2026-11-22 12:00").timestamp()
    # 600 runs of 80 s = 13.3 h: the first night holds floor(9h/80s) = 405 runs, the rest goes the next night
    end = estimate_finish(now, [80.0] * 600, 0.0, w)
    assert end == (T("2026-11-23 22:00") + dt.timedelta(seconds=195 * 80)).timestamp()
    # --at later than now
    at = T("2026-11-22 23:00").timestamp()
    assert estimate_finish(now, [60.0], 0.0, None, not_before=at) == at + 60


def test_learned_overhead_and_formatting():
    assert learned_overhead([], 20.0) == 20.0
    assert learned_overhead([10.0, 12.0], 20.0) == 20.0          # too few to trust
    assert learned_overhead([10.0, 12.0, 11.0, 50.0], 20.0) == 11.5
    assert format_span(3725) == "1h 02m" and format_span(65) == "1m 05s" and format_span(4) == "4s"
    assert progress_bar(5, 1, 10, width=10) == "[#####x....]"
    assert progress_bar(0, 0, 0, width=4) == "[    ]"


# ---- classification and retry decisions ---------------------------------------------------------

@pytest.mark.parametrize("status, code, error, expected", [
    ("completed", 0, None, "ok"),
    ("invalid", 4, "MPTCP not negotiated", "result-invalid"),
    ("aborted", 130, "interrupted by SIGINT", "interrupted"),
    ("aborted", 143, "interrupted by SIGTERM", "interrupted"),
    ("aborted", None, "controller (pid 5 on h) died before restoring; rack restored by recovery", "interrupted"),
    ("aborted", 1, "lost a host: " + SSHError("br2", "lost during traffic: EOF").one_line(), "host-unreachable"),
    ("failed", 2, "a1: congestion control nosuchcc not available", "refused"),
    ("failed", 1, CommandFailed("br1", ("tc", "qdisc", "replace"), 2, "RTNETLINK answers").one_line(),
     "command-failed"),
    ("failed", 1, CommandFailed("br1", ("tc", "qdisc"), None, "").one_line(), "command-failed"),
    ("failed", 1, VerifyError("br1", "shaping", ["path1 forward: bw_bps expected 20M, found 10M"]).one_line(),
     "command-failed"),
    ("failed", 1, TrafficError("mptcp: unable to connect to server").one_line(), "traffic-error"),
    ("failed", 1, SSHError("a1", "cannot connect to 10.0.0.1:22: refused").one_line(), "host-unreachable"),
    ("failed", 1, "iperf3 error; RESTORE PROBLEMS: br1: restore failed", "restore-failed"),
    ("completed", 1, "RESTORE PROBLEMS: br2: unreachable", "restore-failed"),
    ("aborted", None, "record still marked running after recovery", "error"),
    ("weird", None, None, "error"),
])
def test_classify(status, code, error, expected):
    assert classify(status, code, error) == expected
    assert expected in ALL_CLASSES + ("ok",)


def test_the_exception_type_wins_when_the_runner_reports_it():
    assert classify("failed", 1, "whatever text", "TrafficError") == "traffic-error"
    assert classify("failed", 1, "x: `iperf3` failed (exit 1)", "TrafficError") == "traffic-error"


POLICY = RetryPolicy.model_validate({"traffic-error": {"attempts": 3, "wait": "30s", "then": "skip"},
                                     "host-unreachable": {"attempts": 2, "wait": "1min", "then": "pause"}})


def test_retry_then_skip():
    d1 = decide("traffic-error", failures_before=0, interruptions_before=0, policy=POLICY, now=100.0, what="run 3",
                error="boom")
    assert (d1.run_state, d1.action, d1.not_before, d1.counts_failure) == ("pending", "retry", 130.0, True)
    d3 = decide("traffic-error", failures_before=2, interruptions_before=0, policy=POLICY, now=100.0, what="run 3",
                error="boom")
    assert (d3.run_state, d3.action) == ("failed", "skip")


def test_retry_then_pause_says_why():
    d = decide("host-unreachable", failures_before=1, interruptions_before=0, policy=POLICY, now=0.0,
               what="run 7 (link2=10M)", error="lost a host: br2: gone")
    assert (d.run_state, d.action) == ("pending", "pause")
    assert d.pause_reason == "run 7 (link2=10M): host-unreachable (2 of 2 attempts): lost a host: br2: gone"


def test_defaults_pause_on_refusal_and_never_skip_a_restore_problem():
    p = RetryPolicy()
    assert decide("refused", failures_before=0, interruptions_before=0, policy=p, now=0, what="r", error="e").action \
        == "pause"
    for k in ("restore-failed", "error"):
        d = decide(k, failures_before=0, interruptions_before=0, policy=p, now=0, what="r", error="e")
        assert (d.run_state, d.action) == ("pending", "pause")


def test_interruptions_requeue_without_using_the_retry_budget_but_are_capped():
    d = decide("interrupted", failures_before=0, interruptions_before=0, policy=POLICY, now=0, what="r", error=None)
    assert (d.run_state, d.action, d.counts_failure, d.counts_interruption) == ("pending", "requeue", False, True)
    d = decide("interrupted", failures_before=0, interruptions_before=4, policy=POLICY, now=0, what="run 2", error=None)
    assert d.action == "pause" and "interrupted 5 times" in (d.pause_reason or "")
    # stopped on purpose (pause --now): not an interruption of the run's own making
    d = decide("interrupted", failures_before=0, interruptions_before=4, policy=POLICY, now=0, what="r", error=None,
               user_abort=True)
    assert (d.action, d.counts_interruption) == ("requeue", False)


def test_ok_is_done_even_when_cancelled_and_cancel_wins_otherwise():
    assert decide("ok", failures_before=0, interruptions_before=0, policy=POLICY, now=0, what="r", error=None,
                  cancelled=True).run_state == "done"
    d = decide("traffic-error", failures_before=0, interruptions_before=0, policy=POLICY, now=0, what="r",
               error="x", cancelled=True)
    assert (d.run_state, d.action) == ("cancelled", "cancel")


# ---- the scheduler's next step ------------------------------------------------------------------

def runs(*states: str, not_before: float | None = None) -> list[RunView]:
    return [RunView(i + 1, s, not_before if s == "pending" else None, 5.0) for i, s in enumerate(states)]


def step(state="running", rs=None, now=1000.0, **kw):
    args = dict(window=None, pause_s=0.0, last_finished=None, overhead_s=10.0)
    args.update(kw)
    not_before = args.pop("not_before", None)
    return next_step(state, not_before, rs if rs is not None else runs("done", "pending", "pending"), now, **args)


def test_next_step_runs_the_lowest_ready_seq():
    s = step()
    assert (s.kind, s.seq) == ("run", 2)
    s = step(rs=[RunView(1, "pending", 2000.0, 5), RunView(2, "pending", None, 5)])
    assert (s.kind, s.seq) == ("run", 2)  # run 1 waits for its retry: run 2 goes first


def test_next_step_waits():
    s = step(not_before=5000.0)
    assert (s.kind, s.until, s.hold_rack) == ("wait", 5000.0, False)
    s = step(pause_s=30.0, last_finished=990.0)
    assert (s.kind, s.until, s.hold_rack, s.why) == ("wait", 1020.0, True, "pause between runs")
    s = step(rs=runs("done", "pending", not_before=1500.0))
    assert (s.kind, s.until, s.hold_rack) == ("wait", 1500.0, True)
    w = Window(22 * 60, 7 * 60)
    noon = T("2026-11-22 12:00").timestamp()
    s = step(now=noon, window=w)
    assert (s.kind, s.hold_rack) == ("wait", False) and s.until == T("2026-11-22 22:00").timestamp()
    assert "outside the window 22:00-07:00" in s.why
    assert step(now=T("2026-11-22 23:00").timestamp(), window=w).kind == "run"


def test_next_step_finish_and_idle():
    assert step(rs=runs("done", "failed", "cancelled")).kind == "finish"
    assert step(rs=runs("done", "running")).kind == "idle"   # a run in flight (or left by a crash)
    assert step(state="paused").kind == "idle"
    assert step(state="cancelled").kind == "idle"
