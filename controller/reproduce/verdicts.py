"""Each paper's qualitative claims and the rule that decides them from the measured cells (pure).

A verdict is one of
    reproduced          the rule holds on the means of every cell it looks at
    not reproduced      the rule fails on at least one of them
    not runnable here   a cell the rule needs cannot be measured on this rack (the reason is given)
    inconclusive        the runs that would decide it are missing or failed
and says which numbers decided it. Its strength: "firm" when every deciding comparison also holds
beyond the 95 % confidence intervals (the intervals do not overlap the other side), "weak" when
it holds on the means only, "no CI" when a deciding cell has a single value (no interval is ever
drawn from one repetition). Thresholds are the papers' own numbers; where a rule needs a
tolerance it is stated with its reason (papers.MODEL_TOLERANCE_PP).
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Mapping, Sequence

from controller.reproduce.cells import Cell, Cells
from controller.reproduce.papers import BBR_SHARE_CLAIM_PCT, COUPLED, MCUBIC_ROWS, MODEL_TOLERANCE_PP
from controller.units import parse_delay_us, parse_rate

REPRODUCED = "reproduced"
NOT_REPRODUCED = "not reproduced"
NOT_RUNNABLE = "not runnable here"
INCONCLUSIVE = "inconclusive"
STATUSES = (REPRODUCED, NOT_REPRODUCED, NOT_RUNNABLE, INCONCLUSIVE)


@dataclass(frozen=True)
class Verdict:
    claim: str
    status: str
    reason: str
    evidence: tuple[str, ...] = ()
    strength: str | None = None      # firm | weak | no CI (None when nothing was compared)

    def to_json(self) -> dict:
        return {"claim": self.claim, "status": self.status, "reason": self.reason, "evidence": list(self.evidence),
                "strength": self.strength}


@dataclass
class Context:
    """What the rules see: the cells, the rows this rack cannot run (row -> reason), the field
    test's latest table (or None) and the rack's kind."""
    cells: Cells
    unavailable: Mapping[str, str] = field(default_factory=dict)
    field_runs: Sequence[Mapping[str, Any]] = ()
    rack_kind: str = "virtual"
    papers: Sequence[str] = ()


@dataclass(frozen=True)
class Claim:
    id: str
    paper: str
    text: str           # the claim as the paper makes it
    source: str         # where in the paper
    rule: str           # how ctl decides it
    decide: Callable[[Context], Verdict]
    # Why a claim may not reproduce here is never free text: the report shows what the paper's text
    # establishes (hypotheses.CITATIONS) and the hypotheses tested by experiment (hypotheses.HYPOTHESES).


class _Judge:
    """Collects comparisons: each one's outcome, whether it also holds beyond the CIs, the evidence."""

    def __init__(self, claim: str):
        self.claim = claim
        self.results: list[tuple[bool, str]] = []     # (holds, firmness: firm | weak | no CI)
        self.evidence: list[str] = []

    def _firm(self, holds: bool, beyond: bool | None) -> str:
        if beyond is None:
            return "no CI"
        return "firm" if beyond else "weak"

    def greater(self, a: Cell, b: Cell, label: str = "") -> bool:
        ma, mb = a.stat.mean, b.stat.mean
        assert ma is not None and mb is not None
        holds = ma > mb
        lo_a, hi_a, lo_b, hi_b = a.low, a.high, b.low, b.high
        beyond = None if None in (lo_a, hi_a, lo_b, hi_b) else ((lo_a > hi_b) if holds else (hi_a <= lo_b))
        self.results.append((holds, self._firm(holds, beyond)))
        self.evidence.append(f"{label or a.column}: {a.row} {a.text()} {'>' if holds else '<='} {b.row} {b.text()}")
        return holds

    def at_least(self, a: Cell, threshold: float, label: str = "", unit: str = "") -> bool:
        m = a.stat.mean
        assert m is not None
        holds = m >= threshold
        lo, hi = a.low, a.high
        beyond = None if lo is None or hi is None else ((lo >= threshold) if holds else (hi < threshold))
        self.results.append((holds, self._firm(holds, beyond)))
        self.evidence.append(f"{label or a.column}: {a.row} {a.text()} {'>=' if holds else '<'} {threshold:g}{unit}")
        return holds

    def below(self, a: Cell, threshold: float, label: str = "", unit: str = "") -> bool:
        m = a.stat.mean
        assert m is not None
        holds = m < threshold
        lo, hi = a.low, a.high
        beyond = None if lo is None or hi is None else ((hi < threshold) if holds else (lo >= threshold))
        self.results.append((holds, self._firm(holds, beyond)))
        self.evidence.append(f"{label or a.column}: {a.row} {a.text()} {'<' if holds else '>='} {threshold:g}{unit}")
        return holds

    def within(self, a: Cell, target: float, tol: float, label: str = "", unit: str = "") -> bool:
        m = a.stat.mean
        assert m is not None
        holds = abs(m - target) <= tol
        lo, hi = a.low, a.high
        beyond = None if lo is None or hi is None else \
            ((lo >= target - tol and hi <= target + tol) if holds else (hi < target - tol or lo > target + tol))
        self.results.append((holds, self._firm(holds, beyond)))
        self.evidence.append(f"{label or a.column}: {a.row} {a.text()}, model {target:.4g}{unit}: "
                             f"{'within' if holds else 'beyond'} ±{tol:g}")
        return holds

    def verdict(self, reason_ok: str, reason_fail: str, extra: Sequence[str] = ()) -> Verdict:
        if not self.results:
            return Verdict(self.claim, INCONCLUSIVE, "nothing to compare", tuple(extra))
        failed = [r for r in self.results if not r[0]]
        deciding = failed or self.results
        kinds = {k for _, k in deciding}
        strength = "no CI" if "no CI" in kinds else ("weak" if "weak" in kinds else "firm")
        status = NOT_REPRODUCED if failed else REPRODUCED
        return Verdict(self.claim, status, reason_fail if failed else reason_ok, tuple(self.evidence) + tuple(extra),
                       strength)


def _have(c: Cell | None) -> bool:
    return c is not None and c.stat.mean is not None


def _not_runnable(claim: str, ctx: Context, rows: Sequence[str], what: str) -> Verdict:
    gone = [r for r in rows if r in ctx.unavailable]
    return Verdict(claim, NOT_RUNNABLE, f"{', '.join(gone)} cannot run on this rack ({what})",
                   tuple(f"{r}: {ctx.unavailable[r]}" for r in gone))


def _missing(claim: str, ctx: Context, rows: Sequence[str], what: str) -> Verdict | None:
    """not runnable here when a row the rule needs cannot run on this rack; None: go on."""
    return _not_runnable(claim, ctx, rows, what) if any(r in ctx.unavailable for r in rows) else None


def _delay_key(col: str) -> float:
    try:
        return parse_delay_us(col.split(":")[-1])
    except Exception:      # noqa: BLE001 - an odd label sorts last, never fails a verdict
        return float("inf")


# ---- MCubic --------------------------------------------------------------------------------------

def _t1(ctx: Context) -> tuple[list[str], list[str]]:
    cols = sorted(ctx.cells.columns("mcubic", "Table 1", "jain_index"), key=lambda c: _rate_key(c))
    rows = ctx.cells.rows("mcubic", "Table 1", "jain_index")
    return cols, rows


def _rate_key(c: str) -> float:
    try:
        return float(parse_rate(c))
    except Exception:      # noqa: BLE001
        return float("inf")


def coupled_fairer(ctx: Context) -> Verdict:
    claim = "mcubic-coupled-fairer"
    if "Cubic" in ctx.unavailable:
        return _not_runnable(claim, ctx, ["Cubic"], "the uncoupled reference row")
    coupled_here = [r for r in COUPLED if r not in ctx.unavailable]
    if not coupled_here:
        return _not_runnable(claim, ctx, list(COUPLED), "no coupled algorithm")
    cols, _ = _t1(ctx)
    j = _Judge(claim)
    gaps = []
    for col in cols:
        cub = ctx.cells.get("mcubic", "Table 1", "Cubic", col, "jain_index")
        if not _have(cub):
            gaps.append(f"{col}: no Cubic result")
            continue
        for r in coupled_here:
            c = ctx.cells.get("mcubic", "Table 1", r, col, "jain_index")
            if _have(c):
                j.greater(c, cub, f"link2 {col}")
            else:
                gaps.append(f"{col}: no {r} result")
    if not j.results:
        return Verdict(claim, INCONCLUSIVE, "no link-2 rate has both a coupled and the Cubic result", tuple(gaps))
    extra = gaps + [f"{r}: not runnable here ({ctx.unavailable[r]})" for r in COUPLED if r in ctx.unavailable]
    return j.verdict("every coupled algorithm measured has a higher Jain index than uncoupled Cubic",
                     "a coupled algorithm is not fairer than uncoupled Cubic at some link-2 rate", extra)


def mcubic_fairest(ctx: Context) -> Verdict:
    claim = "mcubic-fairest"
    m = _missing(claim, ctx, ["MCubic"], "the algorithm the claim is about")
    if m:
        return m
    cols, rows = _t1(ctx)
    j = _Judge(claim)
    tie = 0.01     # the paper prints two decimals: MCubic 0.66 = LIA 0.66 counts as "the highest"
    for col in cols:
        mc = ctx.cells.get("mcubic", "Table 1", "MCubic", col, "jain_index")
        if not _have(mc):
            continue
        for r in rows:
            c = ctx.cells.get("mcubic", "Table 1", r, col, "jain_index")
            if r == "MCubic" or not _have(c):
                continue
            shifted = Cell(c.paper, c.table, f"{r} - {tie:g}", c.column, c.metric, tuple(v - tie for v in c.values))
            j.greater(mc, shifted, f"link2 {col}")
    if not j.results:
        return Verdict(claim, INCONCLUSIVE, "no link-2 rate has MCubic and another algorithm measured")
    return j.verdict("MCubic's mean Jain index is the highest (ties within the paper's 0.01 rounding) at every "
                     "link-2 rate", "another algorithm is fairer than MCubic at some link-2 rate")


def _ratio_cells(ctx: Context, table: str, row: str) -> list[Cell]:
    cs = [c for c in ctx.cells.select("mcubic", table, row=row, metric="ratio") if _have(c)]
    return sorted(cs, key=lambda c: _delay_key(c.column))


def mcubic_ratio(ctx: Context) -> Verdict:
    claim = "mcubic-ratio-at-least-1"
    m = _missing(claim, ctx, ["MCubic"], "the algorithm the claim is about")
    if m:
        return m
    cs = _ratio_cells(ctx, "Table 2", "MCubic")
    if not cs:
        return Verdict(claim, INCONCLUSIVE, "no completed MCubic run of Table 2")
    j = _Judge(claim)
    for c in cs:
        j.at_least(c, 1.0, f"delay {c.column}")
    return j.verdict("MCubic's MPTCP/TCP ratio is >= 1 at every delay measured",
                     "MCubic's MPTCP/TCP ratio is below 1 at some delay")


def others_below_one(ctx: Context) -> Verdict:
    claim = "coupled-below-1-at-long-delays"
    rows = [r for r in ("LIA", "OLIA", "wVegas") if r not in ctx.unavailable]
    if not rows:
        return _not_runnable(claim, ctx, ["LIA", "OLIA", "wVegas"], "the algorithms the claim is about")
    j = _Judge(claim)
    for r in rows:
        for c in _ratio_cells(ctx, "Table 2", r):
            if _delay_key(c.column) >= 200_000:
                j.below(c, 1.0, f"delay {c.column}")
    if not j.results:
        return Verdict(claim, INCONCLUSIVE, "no completed LIA/OLIA/wVegas run of Table 2 at 200 ms or more")
    extra = [f"{r}: not runnable here ({ctx.unavailable[r]})" for r in ("LIA", "OLIA", "wVegas")
             if r in ctx.unavailable]
    return j.verdict("LIA, OLIA and wVegas measured all stay below 1 from 200 ms on",
                     "a coupled algorithm reaches 1 or more at a long delay", extra)


def hetero_falls(ctx: Context) -> Verdict:
    claim = "hetero-ratio-below-1-and-falling"
    rows = ctx.cells.rows("mcubic", "Table 3", "ratio")
    j = _Judge(claim)
    trend: list[str] = []
    falling = True
    for r in rows:
        cs = _ratio_cells(ctx, "Table 3", r)
        for c in cs:
            j.below(c, 1.0, f"100:{c.column.split(':')[-1]}")
        means = [c.stat.mean for c in cs]
        if len(means) >= 2:
            ok = all(a >= b for a, b in zip(means, means[1:]))   # type: ignore[operator]
            falling &= ok
            trend.append(f"{r}: " + " -> ".join(f"{m:.3g}" for m in means if m is not None)
                         + (" (falls)" if ok else " (does not fall)"))
    if not j.results:
        return Verdict(claim, INCONCLUSIVE, "no completed run of Table 3")
    if not any(len(_ratio_cells(ctx, "Table 3", r)) >= 2 for r in rows):
        v = j.verdict("", "")
        return Verdict(claim, INCONCLUSIVE, "one path-2 delay only: the trend cannot be judged", v.evidence)
    v = j.verdict("every algorithm's ratio is below 1 and falls as path 2's delay grows",
                  "some ratio is 1 or more", trend)
    if v.status == REPRODUCED and not falling:
        return Verdict(claim, NOT_REPRODUCED, "a ratio does not fall as path 2's delay grows", v.evidence, v.strength)
    return v


def mcubic_best_hetero(ctx: Context) -> Verdict:
    claim = "mcubic-best-coupled-hetero"
    m = _missing(claim, ctx, ["MCubic"], "the algorithm the claim is about")
    if m:
        return m
    j = _Judge(claim)
    for c in _ratio_cells(ctx, "Table 3", "MCubic"):
        for r in ("LIA", "OLIA", "wVegas"):
            o = ctx.cells.get("mcubic", "Table 3", r, c.column, "ratio")
            if _have(o):
                j.greater(c, o, f"100:{c.column.split(':')[-1]}")
    if not j.results:
        return Verdict(claim, INCONCLUSIVE, "no delay with MCubic and another coupled algorithm measured")
    return j.verdict("MCubic's ratio is above LIA's, OLIA's and wVegas' at every delay measured",
                     "another coupled algorithm has a higher ratio than MCubic somewhere")


# ---- BBRv3 ---------------------------------------------------------------------------------------

def _bbr_cells(ctx: Context, cc: str) -> list[Cell]:
    return [c for c in ctx.cells.select("bbrv3", "Fig. 1-2", row=cc, metric="share_pct") if _have(c)]


def _rtt_loss(c: Cell) -> tuple[float, float]:
    return float(c.facts.get("rtt_us", [0])[0]), float(c.facts.get("loss", [0])[0])


def bbr_kernel_is_v3(ctx: Context) -> bool:
    """Every bbr run recorded that the kernel's `bbr` is BBRv3 (a kernel built from Google's tree)."""
    cs = _bbr_cells(ctx, "bbr")
    kinds = {str(k) for c in cs for k in c.facts.get("kernel_bbr", [])}
    return bool(cs) and kinds == {"v3"}


def bbrv3_row(ctx: Context) -> str:
    """The row the BBRv3 claims are about: the kernel's own bbr where it reports BBRv3; else bbr3
    (ctl's BPF BBRv3 after the draft) where it was measured or can run; else the kernel's bbr
    (BBRv1 upstream: runs from before bbr3, or a rack that cannot load it), which the verdict names."""
    if bbr_kernel_is_v3(ctx) or (not _bbr_cells(ctx, "bbr3") and _bbr_cells(ctx, "bbr")):
        return "bbr"
    return "bbr3" if _bbr_cells(ctx, "bbr3") or "bbr3" not in ctx.unavailable else "bbr"


def bbr_label(row: str, ctx: Context) -> str:
    """How a verdict names a row of the BBRv3 paper's sweep: the kernel's bbr with the BBR it is."""
    if row == "bbr":
        return "bbr (kernel: v3 here)" if bbr_kernel_is_v3(ctx) else "bbr (kernel: v1 here)"
    if row == "bbr3":
        return "bbr3 (BBRv3 after draft-ietf-ccwg-bbr-06, BPF)"
    return row


def bbr_keeps_70(ctx: Context) -> Verdict:
    claim = "bbr-keeps-70"
    row = bbrv3_row(ctx)
    m = _missing(claim, ctx, [row], "the algorithm the claim is about")
    if m:
        return m
    cs = _bbr_cells(ctx, row)
    if not cs:
        return Verdict(claim, INCONCLUSIVE, f"no completed {bbr_label(row, ctx)} run")
    j = _Judge(claim)
    for c in sorted(cs, key=_rtt_loss):
        j.at_least(c, BBR_SHARE_CLAIM_PCT, c.column, " %")
    name = bbr_label(row, ctx)
    return j.verdict(f"{name} keeps >= {BBR_SHARE_CLAIM_PCT:g} % of the bottleneck in every case measured",
                     f"{name} falls below {BBR_SHARE_CLAIM_PCT:g} % of the bottleneck in some case")


def cubic_collapses(ctx: Context) -> Verdict:
    claim = "cubic-collapses"
    m = _missing(claim, ctx, ["cubic"], "the algorithm the claim is about")
    if m:
        return m
    cs = _bbr_cells(ctx, "cubic")
    if not cs:
        return Verdict(claim, INCONCLUSIVE, "no completed cubic run")
    row = bbrv3_row(ctx)
    j = _Judge(claim)
    lossless = [c for c in cs if _rtt_loss(c)[1] == 0]
    hard = [c for c in cs if _rtt_loss(c)[1] >= 1e-4 and _rtt_loss(c)[0] >= 40_000]
    for c in sorted(lossless, key=_rtt_loss):
        j.at_least(c, BBR_SHARE_CLAIM_PCT, c.column, " %")
    for c in sorted(hard, key=_rtt_loss):
        j.below(c, BBR_SHARE_CLAIM_PCT, c.column, " %")
        b = ctx.cells.get("bbrv3", "Fig. 1-2", row, c.column, "share_pct")
        if _have(b):
            j.greater(b, c, c.column)
    if not lossless or not hard:
        v = j.verdict("", "")
        return Verdict(claim, INCONCLUSIVE, "the sweep needs a loss-free cell and one with loss >= 0.01 % at RTT >= "
                       "40 ms", v.evidence)
    return j.verdict(f"Cubic keeps >= 70 % without loss and falls below 70 % (and below {bbr_label(row, ctx)}) at "
                     "loss >= 0.01 % with RTT >= 40 ms", "Cubic does not collapse where the paper says it does (or "
                     "collapses without loss)")


# ---- parallel streams ----------------------------------------------------------------------------

def _case_key(col: str) -> int:
    try:
        return int(col.split("+SC")[-1])
    except ValueError:
        return 10 ** 6


def shares_follow_model(ctx: Context) -> Verdict:
    claim = "shares-follow-model"
    j = _Judge(claim)
    cols = sorted(ctx.cells.columns("parallel", "Fig. 8", "share_pct"), key=_case_key)
    for col in cols:
        for host in ("x1", "m0"):
            c = ctx.cells.get("parallel", "Fig. 8", host, col, "share_pct")
            if _have(c) and c.model_value is not None:
                j.within(c, c.model_value, MODEL_TOLERANCE_PP, col, " %")
    if not j.results:
        return Verdict(claim, INCONCLUSIVE, "no completed parallel-streams run")
    return j.verdict(f"every measured share is within {MODEL_TOLERANCE_PP:g} points of BNA/IB",
                     f"a share is more than {MODEL_TOLERANCE_PP:g} points away from BNA/IB")


def share_grows_with_connections(ctx: Context) -> Verdict:
    claim = "share-grows-with-connections"
    cs = sorted((c for c in ctx.cells.select("parallel", "Fig. 8", row="m0", metric="share_pct") if _have(c)),
                key=lambda c: _case_key(c.column))
    if len(cs) < 2:
        return Verdict(claim, INCONCLUSIVE, "fewer than two values of m0's connections measured")
    j = _Judge(claim)
    for a, b in zip(cs, cs[1:]):
        j.greater(b, a, f"{a.column} -> {b.column}")
    return j.verdict("m0's share grows with every step in its number of connections",
                     "m0's share does not grow at some step")


# ---- MPTCP + BitTorrent --------------------------------------------------------------------------

def mptcp_beats_tcp(ctx: Context) -> Verdict:
    claim = "mptcp-beats-tcp-every-path"
    j = _Judge(claim)
    for col in ctx.cells.columns("mptcp-bt", "Fig. 2", "mbps"):
        m = ctx.cells.get("mptcp-bt", "Fig. 2", "MPTCP", col, "mbps")
        t = ctx.cells.get("mptcp-bt", "Fig. 2", "TCP", col, "mbps")
        if _have(m) and _have(t):
            j.greater(m, t, f"initial path {col}")
    if not j.results:
        return Verdict(claim, INCONCLUSIVE, "no initial path with both TCP and MPTCP tests completed")
    return j.verdict("MPTCP's mean throughput is above TCP's for every initial path tested",
                     "TCP is as fast or faster than MPTCP for some initial path")


def bt_local_mptcp_faster(ctx: Context) -> Verdict:
    claim = "bt-local-mptcp-faster"
    m = ctx.cells.get("mptcp-bt", "Fig. 3", "MPTCP", "tracker local", "mbps")
    t = ctx.cells.get("mptcp-bt", "Fig. 3", "TCP", "tracker local", "mbps")
    if not (_have(m) and _have(t)):
        return Verdict(claim, INCONCLUSIVE, "no completed downloads of both protocols with the tracker local")
    j = _Judge(claim)
    j.greater(m, t, "tracker local")     # type: ignore[arg-type]
    return j.verdict("MPTCP downloads faster than TCP with the tracker local", "MPTCP is not faster with the tracker "
                     "local")


def bt_global_slow(ctx: Context) -> Verdict:
    claim = "bt-global-both-slow"
    j = _Judge(claim)
    extra: list[str] = []
    first_global = True
    seen = False
    for proto in ("TCP", "MPTCP"):
        g = ctx.cells.get("mptcp-bt", "Fig. 3", proto, "tracker global", "mbps")
        loc = ctx.cells.get("mptcp-bt", "Fig. 3", proto, "tracker local", "mbps")
        if not (_have(g) and _have(loc)):
            continue
        seen = True
        j.greater(loc, g, f"{proto}: tracker local vs global")     # type: ignore[arg-type]
        paths = [p for ps in (g.facts.get("first_path") or []) for p in ps]   # type: ignore[union-attr]
        extra.append(f"{proto} with the tracker global: first connection via {', '.join(sorted(set(paths))) or '-'}")
        subs = g.facts.get("subflows_per_link") or []   # type: ignore[union-attr]
        if proto == "MPTCP" and subs:
            extra.append("MPTCP subflows per path (last download): "
                         + ", ".join(f"{k} {v}" for k, v in (subs[-1] or {}).items()))
        first_global &= bool(paths) and all(p == "global" for p in paths)
    if not seen:
        return Verdict(claim, INCONCLUSIVE, "needs completed downloads with the tracker local and global")
    v = j.verdict("both protocols are slower with the tracker global, whose first connection takes the global path",
                  "a protocol is not slower with the tracker global", extra)
    if v.status == REPRODUCED and not first_global:
        return Verdict(claim, NOT_REPRODUCED, "the first connection did not always take the global path", v.evidence,
                       v.strength)
    return v


# ---- the field test -----------------------------------------------------------------------------

def field_table(ctx: Context) -> Verdict:
    claim = "field-table1"
    if not ctx.field_runs:
        return Verdict(claim, NOT_RUNNABLE, "no field run records: the field test needs modem hosts on the move "
                       "(`ctl field start --host H`, then `ctl field stop` and `ctl reproduce report`)")
    if ctx.rack_kind == "virtual":
        return Verdict(claim, NOT_RUNNABLE, "the virtual rack's modem is an AT emulator replaying a recorded drive: "
                       "its Table 1 describes that trace, not a mobile network (shown below for completeness)",
                       tuple(f"field run {r.get('run')}: {len(r.get('table1') or [])} host(s)" for r in ctx.field_runs))
    return Verdict(claim, INCONCLUSIVE, "the hosts are not the paper's Static / Subway / Bus scenarios: the table "
                   "is shown next to the paper's, not judged",
                   tuple(f"field run {r.get('run')}: {len(r.get('table1') or [])} host(s)" for r in ctx.field_runs))


# ---- the claims ----------------------------------------------------------------------------------

CLAIMS: tuple[Claim, ...] = (
    Claim("mcubic-coupled-fairer", "mcubic",
          "Every coupled algorithm is fairer to the single-path TCP flows than uncoupled Cubic",
          "Table 1 (each coupled row above the Cubic row at every link-2 rate)",
          "for every link-2 rate and every coupled algorithm run: mean Jain index > Cubic's mean Jain index",
          coupled_fairer),
    Claim("mcubic-fairest", "mcubic", "MCubic's fairness index is the highest in every test",
          "section 4.2.1 text and Table 1",
          "at every link-2 rate: MCubic's mean >= every other algorithm's mean - 0.01 (the paper prints two "
          "decimals, and its MCubic ties LIA and OLIA)", mcubic_fairest),
    Claim("mcubic-ratio-at-least-1", "mcubic",
          "With MCubic the MPTCP / single-path TCP ratio stays at 1 or above at every delay (homogeneous case)",
          "section 4.2.2, Table 2", "MCubic's mean ratio >= 1 at every delay measured", mcubic_ratio),
    Claim("coupled-below-1-at-long-delays", "mcubic",
          "LIA, OLIA and wVegas fall below 1 on long-delay paths", "section 4.2.2, Table 2 (200-800 ms)",
          "every LIA, OLIA, wVegas mean ratio < 1 at delays of 200 ms and more", others_below_one),
    Claim("hetero-ratio-below-1-and-falling", "mcubic",
          "With heterogeneous delays MPTCP is slower than single-path TCP, the more so the longer path 2",
          "section 4.2.2 case 2, Table 3",
          "every algorithm: mean ratio < 1 at every path-2 delay, and the means do not rise as the delay grows",
          hetero_falls),
    Claim("mcubic-best-coupled-hetero", "mcubic",
          "MCubic keeps the best ratio of the coupled algorithms with heterogeneous delays", "Table 3",
          "at every path-2 delay: MCubic's mean ratio > LIA's, OLIA's and wVegas' means", mcubic_best_hetero),
    Claim("bbr-keeps-70", "bbrv3", "BBRv3 keeps 70 % or more of the bottleneck in every case",
          "section 2 text, Fig. 2",
          f"every (RTT, loss) case: BBRv3's mean throughput >= {BBR_SHARE_CLAIM_PCT:g} % of the bottleneck rate "
          "(BBRv3: bbr3, ctl's BPF BBRv3 after draft-ietf-ccwg-bbr-06, or the kernel's bbr where the kernel reports "
          "BBRv3; the kernel's BBRv1 only where neither runs, and then named)", bbr_keeps_70),
    Claim("cubic-collapses", "bbrv3", "Cubic's throughput collapses except at low loss or low RTT",
          "section 2 text, Fig. 1",
          f"Cubic >= {BBR_SHARE_CLAIM_PCT:g} % at loss 0 (every RTT); < {BBR_SHARE_CLAIM_PCT:g} % and below BBRv3 (as "
          "in bbr-keeps-70) at every case with loss >= 0.01 % and RTT >= 40 ms", cubic_collapses),
    Claim("shares-follow-model", "parallel",
          "The measured shares are almost identical to the BNA/IB model's predictions",
          "section 4, Fig. 8",
          f"every case: |mean share - model| <= {MODEL_TOLERANCE_PP:g} points for x1 and m0 (the paper's own largest "
          "gap, SC64+SC32: 58 % measured vs 66.7 % predicted)", shares_follow_model),
    Claim("share-grows-with-connections", "parallel",
          "Bandwidth is divided by the number of connections: the new host's share grows with its connections",
          "section 3.2", "m0's mean share rises from each number of connections to the next",
          share_grows_with_connections),
    Claim("mptcp-beats-tcp-every-path", "mptcp-bt", "MPTCP beats TCP for every initial path", "Fig. 2",
          "for every initial path tested: MPTCP's mean iperf3 throughput > TCP's", mptcp_beats_tcp),
    Claim("bt-local-mptcp-faster", "mptcp-bt", "With the tracker on the local network, MPTCP downloads faster",
          "Fig. 3a", "tracker local: MPTCP's mean download throughput > TCP's", bt_local_mptcp_faster),
    Claim("bt-global-both-slow", "mptcp-bt",
          "With the tracker behind the global path both are slow: the first subflow takes the global path",
          "Fig. 3b", "tracker global: each protocol's mean throughput < its mean with the tracker local, and every "
          "download's first connection took the global path", bt_global_slow),
    Claim("field-table1", "field", "Table 1: rate, RTT, jitter and CINR of static, subway and bus hosts on WiBro",
          "Table 1", "shown next to the paper's; judged only on a physical rack whose hosts are the paper's scenarios",
          field_table),
)


def judge(ctx: Context) -> list[tuple[Claim, Verdict]]:
    """Every claim of the papers in `ctx.papers` (all when empty), with its verdict."""
    return [(c, c.decide(ctx)) for c in CLAIMS if not ctx.papers or c.paper in ctx.papers]


def unavailable_rows(statuses: Mapping[str, Any]) -> dict[str, str]:
    """Rows of the papers' tables this rack cannot run -> why (from algorithms.AlgorithmStatus)."""
    out = {}
    for label, name in MCUBIC_ROWS.items():
        st = statuses.get(name)
        if st is None or not getattr(st, "runnable", False):
            out[label] = getattr(st, "reason", "neither in the kernel nor one of ctl's BPF programs")
    for name in ("bbr", "bbr3", "cubic"):
        st = statuses.get(name)
        if st is None or not getattr(st, "runnable", False):
            out[name] = getattr(st, "reason", "not one of ctl's BPF programs here" if name == "bbr3"
                                else "not in the kernel")
    return out


