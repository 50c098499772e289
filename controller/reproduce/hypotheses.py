"""Why a claim does not reproduce here: what the papers' texts establish (citations), the candidate
causes of a deviation as named hypotheses, each with the experiment ctl runs to test it, and the
calibrations that check the rack itself (pure data).

Nothing here is a cause until its experiment says so: the report shows each hypothesis with its
experiment's numbers and what they mean (controller.reproduce.evidence decides, with the rule in
controller.reproduce.effects). A statement about a paper is a `Citation`: the paper's own words
(Korean, quoted verbatim; the tests check each quote against the papers) or the source file it
rests on, and what follows from them. Predictions are fixed here, before any run: an experiment is never tuned to a paper's number.

The experiments are ordinary campaigns (`ctl reproduce --deviations` queues them; `--full` queues
them after the papers' own designs; the same files are shipped in campaigns/deviations/).
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Mapping

# every citation, type and competitor name is re-exported here (the names stay where they were)
from controller.reproduce.citations import (  # noqa: F401
    BBR_KERNEL,
    BBR_LOSS_THRESH,
    BBR_SHAPING,
    BT_KERNEL,
    CITATIONS,
    CUBIC_314_VS_618,
    MCUBIC_DUMMYNET,
    MCUBIC_IMPLEMENTATION,
    MCUBIC_NO_FRIENDLINESS,
    MCUBIC_SLOW_START,
    MCUBIC_START_STOP,
    MCUBIC_T1_EQ12,
    MCUBIC_T1_JAIN,
    MCUBIC_T1_LENGTH,
    MCUBIC_T1_SETUP,
    MCUBIC_T1_USERS,
    MCUBIC_TCP_IS_CUBIC_421,
    MCUBIC_TCP_IS_CUBIC_422,
    TCP_CUBIC_U32,
    Citation,
)
from controller.reproduce.entities import ENTITY_METRICS
from controller.reproduce.hypotheses_competitor import (  # noqa: F401
    COMPETITOR_CCS,
    COMPETITOR_EXPERIMENTS,
    COMPETITOR_HYPOTHESES,
    COMPETITOR_T2_CCS,
    COMPETITOR_T2_COLUMNS,
    COMPETITOR_T2_DELAYS,
    COMPETITOR_T3_CCS,
    COMPETITOR_T3_COLUMNS,
    COMPETITOR_T3_DELAYS2,
    COMPETITOR_T3_LIA_DELAY2,
    COMPETITOR_UNTESTED,
    COMPETITORS,
    LAST_T3,
    LAST_T3_CUBIC,
    OTHER_T2,
    OTHER_T3,
    OTHER_T3_CUBIC,
    T2_OLIA_WVEGAS,
    T2_OLIA_WVEGAS_DELAYS,
)
from controller.reproduce.hypothesis_types import (  # noqa: F401
    T2_COLUMNS,
    T2_LIA_100 as _T2_LIA_100,
    T3_COLUMNS,
    Comparison,
    Experiment,
    Hypothesis,
    UntestedCause,
    cases as _cases,
    column as _col,
    design as _design,
    deviation_column,
    t2_mcubic as _t2,
    t3_mcubic as _t3,
)
from controller.reproduce.papers import TABLE1
from controller.scenarios.shared_bottleneck import TABLE2, TABLE3


# ---- experiments ---------------------------------------------------------------------------------


def m0_model_error_pp(summary: Mapping[str, Any]) -> float | None:
    """|m0's measured share - its BNA share| in percentage points (parallel-streams summary)."""
    for h in summary.get("hosts") or []:
        if h.get("host") == "m0" and h.get("measured_share_pct") is not None and \
                h.get("predicted_share_pct") is not None:
            return round(abs(float(h["measured_share_pct"]) - float(h["predicted_share_pct"])), 3)
    return None


MCUBIC_READINGS = ("mcubic", "mcubic_wrap", "mcubic_stretch")
RUN_LENGTH_WINDOWS = ("0s:45s", "45s:600s", "300s:600s")
QUEUES = ("50", "500", "1667")       # dummynet's default; 10x; 1 BDP of 100 Mbit/s x 200 ms in 1500 B slots

# Table 1's deviation experiment: the distinct-bottleneck scenario at ONE link-2 column, 20 Mbit/s:
# the only column measured on this rack (bench/results/cc_tables-2026-11-24.md, 45 s runs), where
# MCubic's index (0.55) is 0.15 below the paper's 0.70 and Cubic's (0.72) above every coupled
# row's, the reverse of both claims. One shared baseline (no delay added, dummynet's 50 slots: ctl's
# Table 1 set-up), each cause varied alone: a one-way delay of 100 ms on each link (section 4.2.1
# states no delay for Table 1; 100 ms is Table 2's first column and the delay section 4.2.2 calls a
# normal Internet path: «인터넷의 지연이 100ms 이하이면 정상적인 경우로 간주되지만»), a 500-slot queue (10x the
# default, the value dev-mcubic-queue uses at a shared bottleneck), the two other readings of eq. 10.
# MCubic and LIA (a coupled algorithm of each kind) against uncoupled Cubic, the claims' comparison.
T1_COLUMN = "20M"
T1_COLUMN_TEXT = "20 Mbit/s"
T1_BASE = {"delay": "0", "queue": "50"}
T1_DELAY = {"delay": "100ms", "queue": "50"}
T1_QUEUE = {"delay": "0", "queue": "500"}
T1_CCS = ("mcubic", "lia", "cubic")
# Table 1's run length: 300 s runs of ctl's set-up at the same column, each read over its first 60 s
# (ctl's Table 1 length), the rest, and the whole (paired per run: the same runs, other windows).
T1_RUN_LENGTH_WINDOWS = ("0s:60s", "60s:300s", "0s:300s")

EXPERIMENTS: dict[str, Experiment] = {e.key: e for e in (
    Experiment(_design("dev-mcubic-run-length", "Run length: 600 s runs at 100 ms, ratios over sub-windows",
                       {"delay": "100ms", "tcp-cc": "cubic", "duration": "600s"},
                       _cases(("mcubic", "lia", "cubic"), [{}])),
               columns=(), windows=RUN_LENGTH_WINDOWS),
    Experiment(_design("dev-mcubic-eq10-t2", "Eq. 10 below the origin: three readings of MCubic, Table 2 delays",
                       {"tcp-cc": "cubic"}, _cases(MCUBIC_READINGS, T2_COLUMNS)), columns=("delay",)),
    Experiment(_design("dev-mcubic-eq10-t3", "Eq. 10 below the origin: three readings of MCubic, Table 3 delays",
                       {"tcp-cc": "cubic"}, _cases(MCUBIC_READINGS, T3_COLUMNS)), columns=("delay2",)),
    Experiment(_design("dev-mcubic-queue", "Queue: 50, 500 and 1667 slots (1 BDP) at 100 ms",
                       {"delay": "100ms", "tcp-cc": "cubic", "duration": "60s"},
                       _cases(("mcubic", "lia", "cubic"), [{"queue": q} for q in QUEUES])), columns=("queue",)),
    Experiment(_design("dev-mcubic-slow-start", "Slow start: MCubic with and without HyStart",
                       {"tcp-cc": "cubic", "duration": "60s"},
                       _cases(("mcubic", "mcubic_nohs"), [{"delay": d} for d in ("100ms", "200ms")])),
               columns=("delay",)),
    Experiment(_design("dev-calibration", "Calibration: one subflow against Cubic, uncoupled Reno against Cubic",
                       {"delay": "100ms", "tcp-cc": "cubic", "duration": "60s"},
                       [{"cc": "mcubic", "subflows": "1"}, {"cc": "cubic", "subflows": "1"},
                        {"cc": "reno", "subflows": "2"}]),
               columns=("subflows",)),
    Experiment(_design("dev-balia-floor", "BALIA's decrease: fractional alpha (the paper) vs floored (the "
                       "authors' Linux code), against Reno", {"delay": "100ms", "tcp-cc": "reno", "duration": "45s"},
                       _cases(("balia", "balia_floor", "lia"), [{}])), columns=()),
    Experiment(_design("dev-mcubic-t1", f"Table 1 at link 2 = {T1_COLUMN_TEXT}: path delay, queue and eq. 10 readings, "
                       "Jain's index over the three flows and over other entities",
                       {"link1": "100M", "link2": T1_COLUMN, "tcp-cc": "cubic", "duration": "60s"},
                       _cases(T1_CCS, [T1_BASE, T1_DELAY, T1_QUEUE])
                       + [{**T1_BASE, "cc": v} for v in MCUBIC_READINGS[1:]],
                       scenario="distinct-bottleneck"),
               columns=("delay", "queue"), metric="jain_index", extra_metrics=ENTITY_METRICS),
    Experiment(_design("dev-mcubic-t1-run-length", f"Table 1 at link 2 = {T1_COLUMN_TEXT}: 300 s runs, Jain's index over "
                       "their first 60 s, the rest and the whole",
                       {"link1": "100M", "link2": T1_COLUMN, "tcp-cc": "cubic", "duration": "300s", **T1_BASE},
                       _cases(T1_CCS, [{}]), scenario="distinct-bottleneck"),
               columns=(), windows=T1_RUN_LENGTH_WINDOWS, metric="jain_index"),
    *COMPETITOR_EXPERIMENTS,
    Experiment(_design("dev-mcubic-competitor-t1", f"Table 1 at link 2 = {T1_COLUMN_TEXT}: the rack kernel's cubic vs "
                       "cubic314 (Linux 3.14's tcp_cubic.c, BPF) as the single-path flows",
                       {"link1": "100M", "link2": T1_COLUMN, "duration": "60s", **T1_BASE},
                       [{"cc": cc, "tcp-cc": t} for cc in T1_CCS for t in COMPETITORS],
                       scenario="distinct-bottleneck"),
               columns=("tcp-cc",), metric="jain_index"),
    Experiment(_design("dev-parallel-queue", "Parallel streams: the scenario's 100-slot queue vs 1000 slots",
                       {"duration": "40s", "base-streams": "64"},
                       [{"streams": n, "queue": q} for n in ("32", "64") for q in ("100", "1000")],
                       scenario="parallel-streams", paper="parallel"),
               columns=("streams",), row="queue", metric="m0_model_error_pp", value_of=m0_model_error_pp,
               row_labels={"100": "queue 100", "1000": "queue 1000"}),
)}

# ---- hypotheses ----------------------------------------------------------------------------------


_RL_BASE = f"window {RUN_LENGTH_WINDOWS[0]}"

HYPOTHESES: tuple[Hypothesis, ...] = (
    Hypothesis(
        "mcubic-run-length", "mcubic", ("mcubic-ratio-at-least-1",),
        "The paper's runs were longer than ctl's: over a long run MCubic's (and LIA's) MPTCP / TCP ratio at 100 ms "
        "moves towards the paper's 1.95 (1.86)",
        (MCUBIC_START_STOP,), "dev-mcubic-run-length",
        "the ratio over the later windows of a 600 s run (45-600 s, 300-600 s) is closer to the paper's value than "
        "over its first 45 s (paired per run)",
        tuple(Comparison(f"{cc}: window {w} vs {RUN_LENGTH_WINDOWS[0]}", (cc, f"window {w}"), (cc, _RL_BASE),
                         paired=True, toward=paper)
              for cc, paper in (("mcubic", _t2("100ms")), ("lia", _T2_LIA_100)) for w in RUN_LENGTH_WINDOWS[1:])),
    Hypothesis(
        "mcubic-eq10-reading", "mcubic", ("mcubic-ratio-at-least-1",),
        "The authors evaluated eq. 10 below the origin as Linux's tcp_cubic.c does (u32 arithmetic that wraps) or "
        "with a curve that starts at the reduced window, not literally (clamped at 0, which freezes a subflow's "
        "window for K_i^2 x sum_{j!=i} 1/K_j seconds after each of its losses); their MCubic regrew faster",
        (MCUBIC_IMPLEMENTATION, TCP_CUBIC_U32), "dev-mcubic-eq10-t2",
        "mcubic_wrap and mcubic_stretch have higher MPTCP / TCP ratios than the literal mcubic, towards the paper's "
        "Table 2 values (1.95 / 1 / 1 / 1)",
        tuple(Comparison(f"{v} vs mcubic, delay {d}", (v, _col("delay", d)), ("mcubic", _col("delay", d)),
                         toward=_t2(d)) for v in MCUBIC_READINGS[1:] for d in TABLE2["columns"])),
    Hypothesis(
        "mcubic-eq10-reading-t3", "mcubic", ("mcubic-best-coupled-hetero", "hetero-ratio-below-1-and-falling"),
        "As above, with path 2 slower (Table 3): a reading that regrows faster after a loss moves MCubic's ratio "
        "towards the paper's 0.74 / 0.47 / 0.42",
        (MCUBIC_IMPLEMENTATION, TCP_CUBIC_U32), "dev-mcubic-eq10-t3",
        "mcubic_wrap and mcubic_stretch move the ratio towards the paper's Table 3 values",
        tuple(Comparison(f"{v} vs mcubic, 100:{d}", (v, _col("delay2", d)), ("mcubic", _col("delay2", d)),
                         toward=_t3(d)) for v in MCUBIC_READINGS[1:]
              for d in (c.split(":")[1] for c in TABLE3["columns"]))),
    Hypothesis(
        "mcubic-queue", "mcubic", ("mcubic-ratio-at-least-1",),
        "The paper's bridges held more than dummynet's default 50 slots: with a larger queue the coupled "
        "algorithms' ratio against the Cubic flow at 100 ms moves towards the paper's 1.95 (MCubic) and 1.86 (LIA)",
        (MCUBIC_DUMMYNET,), "dev-mcubic-queue",
        "with 500 and 1667 slots the ratio is closer to the paper's value than with 50",
        tuple(Comparison(f"{cc}: queue {q} vs 50", (cc, _col("queue", q)), (cc, _col("queue", "50")), toward=paper)
              for cc, paper in (("mcubic", _t2("100ms")), ("lia", _T2_LIA_100)) for q in QUEUES[1:])),
    Hypothesis(
        "mcubic-slow-start", "mcubic", ("mcubic-ratio-at-least-1",),
        "Without HyStart (ctl's mcubic before issue 22) MCubic's subflows overshoot in slow start against a Cubic "
        "flow that has HyStart, which lowered the measured ratio",
        (MCUBIC_SLOW_START,), "dev-mcubic-slow-start",
        "mcubic (with HyStart) has a higher ratio than mcubic_nohs, towards the paper's value",
        tuple(Comparison(f"mcubic vs mcubic_nohs, delay {d}", ("mcubic", _col("delay", d)),
                         ("mcubic_nohs", _col("delay", d)), toward=_t2(d)) for d in ("100ms", "200ms"))),
    *COMPETITOR_HYPOTHESES,
    Hypothesis(
        "balia-floor", "mcubic", (),
        "BALIA's lower ratio against a Reno flow than LIA's (bench/cc_tables.py's do-no-harm table: 0.78 vs 0.88) "
        "comes from the fractional alpha "
        "of its decrease (the BALIA paper's formula, up to 0.75 w cut); the authors' Linux code floors alpha (w/2)",
        (Citation("multipath-tcp/mptcp, branch mptcp_v0.96, net/mptcp/mptcp_balia.c, mptcp_balia_recalc_ai()",
                  "alpha = div64_u64(max_rate, rate); ... md = ((tp->snd_cwnd >> 1) * min(mptcp_balia_scale(alpha, "
                  "alpha_scale), mptcp_balia_scale(3, alpha_scale) >> 1)) >> alpha_scale;",
                  "the authors' code divides in integers: alpha = max_rate / rate is floored (1 until one subflow "
                  "is twice as fast), so a loss cuts w/2, where the paper's fractional alpha cuts up to 0.75 w"),),
        "dev-balia-floor",
        "balia_floor has a higher MPTCP / Reno ratio than balia, towards LIA's",
        (Comparison("balia_floor vs balia", ("balia_floor", ""), ("balia", ""), toward_cell=("lia", "")),)),
    Hypothesis(
        "parallel-starvation", "parallel", ("shares-follow-model",),
        "With the scenario's 100-slot queue at 100 Mbit/s and 10 ms RTT the path holds (100 + 83) packets for "
        "64 + n connections, 1.4 to 2.8 each: connections that cannot get three duplicate ACKs recover by "
        "timeouts and starve, so the shares follow the connections alive, not the nominal counts of BNA/IB",
        (Citation("parallel sockets paper, eq. 2 (the BNA model)",
                  "새로 생성될 소켓 연결들이 할당받을 수 있는 대역폭(Bandwidth for New Allocation :BNA)은 식 ②와 같이 "
                  "계산될 수 있다.",
                  "BNA = B x A_n / (V_k + A_n) counts connections; it says nothing of the packets each can keep in "
                  "flight, which the scenario's queue decides"),),
        "dev-parallel-queue",
        "with a 1000-slot queue (8-11 packets per connection) m0's share is closer to BNA than with 100 slots",
        tuple(Comparison(f"SC64+SC{n}: queue 1000 vs 100", ("queue 1000", _col("streams", n)),
                         ("queue 100", _col("streams", n)), toward=0.0) for n in ("32", "64"))),
)


def _t1(row: str) -> float:
    return TABLE1["rows"][row][TABLE1["columns"].index(T1_COLUMN)]


def t1_column(cond: Mapping[str, str]) -> str:
    """The column of dev-mcubic-t1 a condition fills: `delay 0, queue 50`."""
    return ", ".join(f"{k} {cond[k]}" for k in ("delay", "queue"))


# The paper's Table 1 values at link 2 = 20 Mbit/s: what a cause would move each row towards.
T1_PAPER = {"mcubic": _t1("MCubic"), "lia": _t1("LIA"), "cubic": _t1("Cubic")}
_T1_BASE_COL = t1_column(T1_BASE)
_T1_COUPLED = ("mcubic", "lia")


def _t1_cause(cond: Mapping[str, str], what: str) -> tuple[Comparison, ...]:
    """Each row's index with the cause vs without, towards the paper's value; and, with the cause,
    the claims' order: each coupled row above Cubic's."""
    col = t1_column(cond)
    return tuple(Comparison(f"{cc}: {what} vs ctl's set-up", (cc, col), (cc, _T1_BASE_COL), toward=T1_PAPER[cc])
                 for cc in T1_CCS) + tuple(
        Comparison(f"{cc} above cubic, {what}", (cc, col), ("cubic", col), direction=1) for cc in _T1_COUPLED)


def _t1_entities() -> tuple[Comparison, ...]:
    """Per other entity set: each row's index over it vs ctl's over the same runs (paired), towards the
    paper's value; and the claims' order over it (each coupled row above Cubic's)."""
    out: list[Comparison] = []
    for m in ENTITY_METRICS:
        out += [Comparison(f"{cc}: {m} vs jain_index (the same runs)", (cc, _T1_BASE_COL), (cc, _T1_BASE_COL),
                           paired=True, toward=T1_PAPER[cc], metric=m, baseline_metric="jain_index")
                for cc in T1_CCS]
        out += [Comparison(f"{cc} above cubic, {m}", (cc, _T1_BASE_COL), ("cubic", _T1_BASE_COL), direction=1,
                           metric=m) for cc in _T1_COUPLED]
    return tuple(out)


_T1_CLAIMS = ("mcubic-coupled-fairer", "mcubic-fairest")
_T1_PREDICTION = (f"at link 2 = {T1_COLUMN_TEXT}, each row's Jain index (over the three flows) moves towards the paper's "
                  f"({', '.join(f'{cc} {v:g}' for cc, v in T1_PAPER.items())}), and with the cause present MCubic's "
                  "and LIA's indices are above Cubic's (the order of both claims)")

T1_HYPOTHESES: tuple[Hypothesis, ...] = (
    Hypothesis(
        "mcubic-t1-path-delay", "mcubic", _T1_CLAIMS,
        "The paper's paths had a round-trip time ctl does not add (section 4.2.1, Table 1's scenario, states none; "
        "4.2.2 gives 100-800 ms for the other scenario): the algorithms differ "
        "most at long round trips (Cubic's growth is set by time, a Reno increase by round trips), so at the "
        "rack's own short RTT their indices and their order differ from the paper's",
        (MCUBIC_T1_SETUP,), "dev-mcubic-t1",
        _T1_PREDICTION.replace("with the cause present", "with 100 ms one way on each link"),
        _t1_cause(T1_DELAY, "delay 100ms")),
    Hypothesis(
        "mcubic-t1-queue", "mcubic", _T1_CLAIMS,
        "The paper's dummynet bridges held more than the default 50 slots: with a larger queue the fairness "
        "indices of Table 1 and their order change",
        (MCUBIC_DUMMYNET,), "dev-mcubic-t1",
        _T1_PREDICTION.replace("with the cause present", "with 500 slots"),
        _t1_cause(T1_QUEUE, "queue 500")),
    Hypothesis(
        "mcubic-t1-eq10-reading", "mcubic", _T1_CLAIMS,
        "The authors' MCubic evaluated eq. 10 below the origin otherwise than literally (u32 wrap, or a curve from "
        "the reduced window): its subflows regrow faster after a loss, which changes MCubic's index against the "
        "others",
        (MCUBIC_IMPLEMENTATION, TCP_CUBIC_U32), "dev-mcubic-t1",
        f"mcubic_wrap and mcubic_stretch have a higher Jain index than the literal mcubic at link 2 = {T1_COLUMN_TEXT}, "
        f"towards the paper's MCubic {T1_PAPER['mcubic']:g}, and above Cubic's",
        tuple(Comparison(f"{v} vs mcubic", (v, _T1_BASE_COL), ("mcubic", _T1_BASE_COL), toward=T1_PAPER["mcubic"])
              for v in MCUBIC_READINGS[1:])
        + tuple(Comparison(f"{v} above cubic", (v, _T1_BASE_COL), ("cubic", _T1_BASE_COL), direction=1)
                for v in MCUBIC_READINGS[1:])),
    Hypothesis(
        "mcubic-t1-jain-entities", "mcubic", _T1_CLAIMS,
        "The paper's eq. 12 was computed over other entities than ctl's three flows (per bottleneck: its subflow "
        "and its TCP flow; or the four flows and subflows), which changes the indices and can change their order",
        (MCUBIC_T1_EQ12, MCUBIC_T1_JAIN, MCUBIC_T1_USERS), "dev-mcubic-t1",
        "over link 1's users, over link 2's users, or over the four flows and subflows (the same runs as ctl's "
        f"set-up at link 2 = {T1_COLUMN_TEXT}), each row's index is nearer the paper's than ctl's index over the three "
        "flows, and MCubic's and LIA's are above Cubic's",
        _t1_entities()),
)
_T1_RL_BASE = f"window {T1_RUN_LENGTH_WINDOWS[0]}"
T1_HYPOTHESES = T1_HYPOTHESES + (
    Hypothesis(
        "mcubic-t1-run-length", "mcubic", _T1_CLAIMS,
        "Table 1's runs were longer than ctl's 60 s (the text states no length): over a longer run the coupled "
        "algorithms' and Cubic's indices and their order differ",
        (MCUBIC_T1_LENGTH, MCUBIC_START_STOP), "dev-mcubic-t1-run-length",
        f"at link 2 = {T1_COLUMN_TEXT}, each row's Jain index over 60-300 s and over the whole 300 s of a run is "
        f"nearer the paper's ({', '.join(f'{cc} {v:g}' for cc, v in T1_PAPER.items())}) than over the same run's "
        "first 60 s (paired per run), and over the whole 300 s MCubic's and LIA's indices are above Cubic's",
        tuple(Comparison(f"{cc}: window {w} vs {T1_RUN_LENGTH_WINDOWS[0]}", (cc, f"window {w}"), (cc, _T1_RL_BASE),
                         paired=True, toward=T1_PAPER[cc]) for cc in T1_CCS for w in T1_RUN_LENGTH_WINDOWS[1:])
        + tuple(Comparison(f"{cc} above cubic, window {T1_RUN_LENGTH_WINDOWS[2]}",
                           (cc, f"window {T1_RUN_LENGTH_WINDOWS[2]}"), ("cubic", f"window {T1_RUN_LENGTH_WINDOWS[2]}"),
                           direction=1) for cc in _T1_COUPLED)),
)
_T1_C314, _T1_CKERNEL = _col("tcp-cc", "cubic314"), _col("tcp-cc", "cubic")
T1_HYPOTHESES = T1_HYPOTHESES + (
    Hypothesis(
        "mcubic-t1-competitor-version", "mcubic", _T1_CLAIMS,
        "Table 1's single-path flows most likely ran Linux 3.14.17's Cubic (the paper's kernel, section 4.1), not "
        "the rack kernel's (6.18 here): against 3.14's Cubic the fairness indices of Table 1 and their order "
        "differ from ctl's",
        (MCUBIC_TCP_IS_CUBIC_421, MCUBIC_IMPLEMENTATION, CUBIC_314_VS_618), "dev-mcubic-competitor-t1",
        f"at link 2 = {T1_COLUMN_TEXT}, with cubic314 (3.14's tcp_cubic.c) as the single-path flows each row's Jain "
        "index (over the three flows) is closer to the paper's "
        f"({', '.join(f'{cc} {v:g}' for cc, v in T1_PAPER.items())}) than with the rack kernel's cubic, and MCubic's "
        "and LIA's indices are above Cubic's (the order of both claims)",
        tuple(Comparison(f"{cc}: against cubic314 vs against the kernel's cubic", (cc, _T1_C314), (cc, _T1_CKERNEL),
                         toward=T1_PAPER[cc]) for cc in T1_CCS)
        + tuple(Comparison(f"{cc} above cubic, against cubic314", (cc, _T1_C314), ("cubic", _T1_C314), direction=1)
                for cc in _T1_COUPLED)),
)
HYPOTHESES = HYPOTHESES + T1_HYPOTHESES


_MCUBIC_CLAIMS = ("mcubic-coupled-fairer", "mcubic-fairest", "mcubic-ratio-at-least-1",
                  "coupled-below-1-at-long-delays", "hetero-ratio-below-1-and-falling", "mcubic-best-coupled-hetero")

UNTESTED: tuple[UntestedCause, ...] = (
    *COMPETITOR_UNTESTED,
)

# Claims whose deviation has no candidate cause ctl knows of: claim id -> why (an explicit entry,
# so a claim is never left without one by omission).
NO_CANDIDATE_CAUSE: dict[str, str] = {}


@dataclass(frozen=True)
class Calibration:
    """A check of the rack and of ctl's implementations, with an expected value fixed in advance."""
    id: str
    paper: str
    statement: str
    experiment: str
    cell: tuple[str, str]
    expected: float | None          # None: shown as a bound for other cells, not judged
    tolerance: float
    meaning: str


CALIBRATIONS: tuple[Calibration, ...] = (
    Calibration("mcubic-single-subflow", "mcubic",
                "MCubic with one subflow (K_mptcp = K_i) against kernel Cubic on one path: ratio 1",
                "dev-calibration", ("mcubic", _col("subflows", "1")), 1.0, 0.15,
                "validates ctl's Cubic base (growth, decrease, HyStart) against the kernel's own Cubic"),
    Calibration("cubic-single-subflow", "mcubic",
                "Kernel Cubic on a one-subflow MPTCP connection against kernel Cubic on TCP: ratio 1",
                "dev-calibration", ("cubic", _col("subflows", "1")), 1.0, 0.15,
                "validates that MPTCP itself (one subflow) costs nothing against plain TCP on this rack"),
    Calibration("reno-ceiling", "mcubic",
                "Uncoupled Reno (two subflows) against one Cubic flow at 100 ms",
                "dev-calibration", ("reno", _col("subflows", "2")), None, 0.0,
                "the ceiling of any algorithm with a Reno increase (LIA, OLIA, BALIA): two uncoupled Reno subflows "
                "are the most such an algorithm can take from a Cubic flow"),
)


def hypotheses_for(claim: str) -> list[Hypothesis]:
    return [h for h in HYPOTHESES if claim in h.claims]


def untested_for(claim: str) -> list[UntestedCause]:
    return [u for u in UNTESTED if claim in u.claims]


def experiments_for(papers: tuple[str, ...] | list[str]) -> list[Experiment]:
    return [e for e in EXPERIMENTS.values() if e.design.paper in papers]
