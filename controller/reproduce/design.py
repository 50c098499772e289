"""What a reproduction queues (pure): per paper, the campaigns that regenerate its tables and
figures, in one of three sizes, from the congestion controls the rack can run.

    --full    the papers' own designs: every case, the papers' repetitions where they give them
              (BBRv3: 10 x 60 s, the 600-run sweep), every congestion control the rack can run
    --quick   about 30 minutes on the virtual rack: fewer cases and repetitions, shorter runs
              (what is left out is listed in `notes`, and the report says it)
    --smoke   a few short runs per paper: checks the rack and the whole chain, decides nothing
    --deviations  only the deviation experiments (controller.reproduce.hypotheses): each candidate
              cause of a claim that does not reproduce, tested; --full queues them too, after the
              papers' own designs

Each campaign is an ordinary campaign file (`campaign_document`) for an existing scenario.
A refused run (an algorithm that will not load) is skipped, not a reason to pause the night.
"""
from __future__ import annotations

import argparse
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml

from controller.errors import UsageError
from controller.reproduce.campaign_design import CampaignDesign
from controller.reproduce.hypotheses import EXPERIMENTS, Experiment
from controller.reproduce.papers import BBR_LOSSES, BBR_RTTS, MCUBIC_ROWS, PAPERS, TABLE1
from controller.scenarios.shared_bottleneck import TABLE2, TABLE3
from nodes.congestion.catalog import ALGORITHMS

MODES = ("smoke", "quick", "full", "deviations")
# Between runs: queues drain and the previous run's sockets close (TIME_WAIT does not matter: new ports).
PAUSES = {"smoke": "0s", "quick": "1s", "full": "5s", "deviations": "5s"}


@dataclass(frozen=True)
class NotRunnable:
    paper: str
    what: str
    reason: str

    def to_json(self) -> dict:
        return {"paper": self.paper, "what": self.what, "reason": self.reason}


@dataclass
class ReproductionDesign:
    mode: str
    papers: list[str]
    campaigns: list[CampaignDesign]
    not_runnable: list[NotRunnable] = field(default_factory=list)
    notes: dict[str, list[str]] = field(default_factory=dict)


def parse_papers(text: str | None) -> list[str]:
    """`--papers mcubic,bbrv3` -> the keys, in the report's order (bad input: UsageError)."""
    if not text:
        return list(PAPERS)
    keys = [k.strip() for k in text.split(",") if k.strip()]
    bad = [k for k in keys if k not in PAPERS]
    if bad or not keys:
        raise UsageError(f"--papers: {', '.join(bad) or repr(text)} is not a paper (known: {', '.join(PAPERS)})")
    return [k for k in PAPERS if k in keys]


# ---- MCubic --------------------------------------------------------------------------------------

def mcubic_algorithms(mode: str, available: Mapping[str, Any]) -> tuple[list[str], list[NotRunnable]]:
    """The congestion controls of the MCubic tables: the paper's rows the rack can run (the
    others listed with the reason), and in --full every other algorithm it can run as extra rows."""
    ccs, missing = [], []
    for label, name in MCUBIC_ROWS.items():
        st = available.get(name)
        if st is not None and st.runnable:
            ccs.append(name)
        else:
            why = st.reason if st is not None else "neither in the kernel nor one of ctl's BPF programs"
            missing.append(NotRunnable("mcubic", f"row {label} ({name}) of Tables 1-3", why))
    if mode == "full":
        ccs += sorted(n for n, st in available.items() if st.runnable and n not in ccs and not is_variant(n))
    return ccs, missing


def is_variant(name: str) -> bool:
    """A build of one of ctl's algorithms for analysis (another reading of its paper): never a row of
    a paper's table, only run by the deviation experiments that name it."""
    alg = ALGORITHMS.get(name)
    return alg is not None and getattr(alg, "variant_of", None) is not None


def _experiment_ccs(e: Experiment) -> set[str]:
    cases = e.design.case_values()
    return {v[k] for v in cases for k in ("cc", "tcp-cc") if k in v}


def deviations(papers: Sequence[str], available: Mapping[str, Any]) -> tuple[list[CampaignDesign],
                                                                         list[NotRunnable], list[str]]:
    """The deviation experiments of `papers` that this rack can run (all their algorithms runnable),
    the others listed with the reason: an experiment with a case left out would not test its hypothesis."""
    camps, missing = [], []
    for e in EXPERIMENTS.values():
        if e.design.paper not in papers:
            continue
        gone = {}
        for cc in sorted(_experiment_ccs(e)):
            st = available.get(cc)
            if st is None or not st.runnable:
                gone[cc] = st.reason if st is not None else "neither in the kernel nor one of ctl's BPF programs"
        if gone:
            missing.append(NotRunnable(e.design.paper, f"deviation experiment {e.key}",
                                       "; ".join(f"{cc}: {why}" for cc, why in gone.items())))
        else:
            camps.append(e.design)
    notes = [f"deviations: {len(camps)} experiment{'s' if len(camps) != 1 else ''} testing the candidate causes "
             "of deviations (each with its own repetitions and run lengths; the report judges each hypothesis on "
             "them)"] if camps else []
    return camps, missing, notes


def mcubic(mode: str, available: Mapping[str, Any]) -> tuple[list[CampaignDesign], list[NotRunnable], list[str]]:
    ccs, missing = mcubic_algorithms(mode, available)
    if not ccs:
        return [], missing, []
    if mode == "smoke":
        ccs = ["cubic"] if "cubic" in ccs else ccs[:1]
        t1 = dict(link2=["20M"]), 1, "3s"
        t2 = dict(delay=["50ms"]), 1, "5s"
        t3 = dict(delay2=["150ms"]), 1, "6s"
        notes = [f"smoke: one case per table ({ccs[0]}), one repetition, 3-6 s runs: checks the chain only"]
    elif mode == "quick":
        t1 = dict(link2=["10M", "50M"]), 2, "10s"
        t2 = dict(delay=["100ms", "200ms"]), 1, "20s"
        t3 = dict(delay2=["300ms", "500ms"]), 1, "20s"
        notes = ["quick: Table 1 at link 2 = 10 and 50 Mbit/s (paper: 10, 20, 40, 50), 2 repetitions of 10 s",
                 "quick: Table 2 at 100 and 200 ms (paper: 100, 200, 500, 800 ms), Table 3 at 100:300 and "
                 "100:500 ms (paper: also 100:400), one repetition of 20 s each: no confidence interval",
                 "quick: the paper's algorithms only (--full adds every other algorithm the rack can run)"]
    else:
        t1 = dict(link2=list(TABLE1["columns"])), 3, "60s"
        t2 = dict(delay=list(TABLE2["columns"])), 3, "120s"
        t3 = dict(delay2=[c.split(":")[1] for c in TABLE3["columns"]]), 3, "120s"
        notes = ["full: the paper's columns; it gives neither run length nor repetitions: 3 repetitions, 60 s "
                 "(Table 1) and 120 s (Tables 2-3: 800 ms one-way is 1.6 s per round trip)",
                 "full: rows beyond the paper's are the other algorithms this rack can run"]
    (s1, r1, d1), (s2, r2, d2), (s3, r3, d3) = t1, t2, t3
    camps = [
        CampaignDesign("mcubic", "mcubic-table1", "MCubic Table 1: Jain's index, link 2 x congestion control",
                       "distinct-bottleneck", {"link1": "100M", "tcp-cc": "cubic", "duration": d1},
                       sweep={**s1, "cc": ccs}, repetitions=r1),
        CampaignDesign("mcubic", "mcubic-table2", "MCubic Table 2: MPTCP / TCP, homogeneous delays (case 1)",
                       "shared-bottleneck", {"tcp-cc": "cubic", "duration": d2}, sweep={**s2, "cc": ccs},
                       repetitions=r2),
        CampaignDesign("mcubic", "mcubic-table3", "MCubic Table 3: MPTCP / TCP, path 1 at 100 ms, path 2 slower",
                       "shared-bottleneck", {"tcp-cc": "cubic", "delay1": "100ms", "duration": d3},
                       sweep={**s3, "cc": ccs}, repetitions=r3),
    ]
    return camps, missing, notes


# ---- BBRv3 -----------------------------------------------------------------------------------------

# The BBRv3 paper's rows: Fig. 1 Cubic; Fig. 2 BBRv3, which is ctl's bbr3 (BBRv3 after the IETF
# draft, a BPF program: nodes/congestion/catalog.py) on a stock kernel, with the kernel's own bbr
# (BBRv1 upstream; BBRv3 only on a kernel built from Google's tree) as a reference row.
BBRV3_ROWS = {"cubic": "Fig. 1", "bbr3": "Fig. 2: BBRv3 after draft-ietf-ccwg-bbr-06",
              "bbr": "Fig. 2 reference row: the kernel's bbr"}


def bbrv3(mode: str, available: Mapping[str, Any]) -> tuple[list[CampaignDesign], list[NotRunnable], list[str]]:
    ccs = [c for c in BBRV3_ROWS if available.get(c) is not None and available[c].runnable]
    missing = [NotRunnable("bbrv3", f"{c} ({BBRV3_ROWS[c]})",
                           available[c].reason if c in available else "not in the kernel")
               for c in BBRV3_ROWS if c not in ccs]
    if not ccs:
        return [], missing, []
    if mode == "smoke":
        sweep, reps, dur = {"rtt": ["20ms"], "loss": ["0%"]}, 1, "3s"
        notes = ["smoke: RTT 20 ms, no loss, one 3 s run per algorithm: checks the chain only"]
    elif mode == "quick":
        sweep, reps, dur = {"rtt": ["2ms", "100ms"], "loss": ["0%", "0.1%"]}, 2, "10s"
        notes = ["quick: the sweep's corners, RTT 2 and 100 ms x loss 0 and 0.1 % (paper: 6 RTTs x 5 loss rates), "
                 "2 repetitions of 10 s (paper: 10 x 60 s)"]
    else:
        sweep, reps, dur = {"rtt": list(BBR_RTTS), "loss": list(BBR_LOSSES)}, 10, "60s"
        notes = [f"full: the paper's sweep, 6 RTTs x 5 loss rates x {len(ccs)} algorithms x 10 repetitions of 60 s "
                 f"({len(BBR_RTTS) * len(BBR_LOSSES) * len(ccs) * 10} runs)"]
    notes.append("the BBRv3 claims are decided by bbr3 (ctl's BPF BBRv3 after draft-ietf-ccwg-bbr-06; its "
                 "differences from the draft: ctl cc list), or by the kernel's bbr where the kernel reports BBRv3; "
                 "the kernel's bbr (BBRv1 upstream) is a reference row")
    camp = CampaignDesign("bbrv3", "bbrv3", "BBRv3 paper Fig. 1-2: throughput over RTT x loss", "rtt-loss-sweep",
                          {"duration": dur}, sweep={**sweep, "cc": ccs}, repetitions=reps)
    return [camp], missing, notes


# ---- parallel streams ------------------------------------------------------------------------------

def parallel(mode: str, available: Mapping[str, Any]) -> tuple[list[CampaignDesign], list[NotRunnable], list[str]]:
    if mode == "smoke":
        fixed, streams, reps = {"duration": "10s", "start-after": "2s", "settle": "1s"}, ["16"], 1
        notes = ["smoke: SC64 + SC16 only, one 10 s run"]
    elif mode == "quick":
        fixed, streams, reps = {"duration": "25s"}, ["2", "16", "32", "64"], 2
        notes = ["quick: 2 repetitions of 25 s (both hosts together for 15 s, the first 2 s not measured)"]
    else:
        fixed, streams, reps = {"duration": "40s"}, ["2", "16", "32", "64"], 10
        notes = ["full: 10 repetitions of 40 s (paper: 200 MB per host, one transfer per case; fixed times "
                 "give a defined overlap)"]
    camp = CampaignDesign("parallel", "parallel", "Parallel sockets Fig. 8: SC64 + SCn shares vs BNA/IB",
                          "parallel-streams", {"base-streams": "64", **fixed}, sweep={"streams": streams},
                          repetitions=reps)
    return [camp], [], notes


# ---- MPTCP + BitTorrent ----------------------------------------------------------------------------

def mptcp_bt(mode: str, available: Mapping[str, Any]) -> tuple[list[CampaignDesign], list[NotRunnable], list[str]]:
    if mode == "smoke":
        step1 = {"step": "iperf3", "initial": "local1", "repetitions": "1", "duration": "2s"}
        step2 = [{"step": "bittorrent", "tracker": "local", "size": "1MiB", "repetitions": "1"}]
        notes = ["smoke: step 1 on local path 1 only (one 2 s test per protocol), step 2 with the tracker local "
                 "and a 1 MiB payload, one download per protocol"]
    elif mode == "quick":
        step1 = {"step": "iperf3", "initial": "all", "repetitions": "3", "duration": "5s"}
        step2 = [{"step": "bittorrent", "tracker": t, "size": "20MiB", "repetitions": "2"} for t in ("local", "global")]
        notes = ["quick: step 1 with 3 tests of 5 s per initial path and protocol (paper: 10); step 2 with a "
                 "20 MiB payload (paper: 100 MiB) and 2 downloads per protocol"]
    else:
        step1 = {"step": "iperf3", "initial": "all", "repetitions": "10", "duration": "10s"}
        step2 = [{"step": "bittorrent", "tracker": t, "size": "100MiB", "repetitions": "10"}
                 for t in ("local", "global")]
        notes = ["full: step 1 with 10 tests per initial path and protocol, step 2 with the paper's 100 MiB payload "
                 "and 10 downloads per protocol and tracker"]
    camp = CampaignDesign("mptcp-bt", "mptcp-bt", "MPTCP + BitTorrent Fig. 2-3: step 1 (iperf3) and step 2 "
                          "(webtorrent)", "mptcp-bittorrent", {}, cases=[step1, *step2], repetitions=1)
    return [camp], [], notes


PLANNERS = {"mcubic": mcubic, "bbrv3": bbrv3, "parallel": parallel, "mptcp-bt": mptcp_bt}


def design(mode: str, papers: Sequence[str], available: Mapping[str, Any]) -> ReproductionDesign:
    """The whole reproduction (pure): campaigns in the order they run, what cannot run and why."""
    if mode not in MODES:
        raise UsageError(f"reproduce: unknown mode {mode!r} ({', '.join(MODES)})")
    out = ReproductionDesign(mode, list(papers), [])
    for key in papers:
        planner = PLANNERS.get(key)
        if mode == "deviations":
            camps, missing, notes = deviations([key], available)
            out.campaigns += camps
            out.not_runnable += missing
            if notes:
                out.notes[key] = notes
            continue
        if planner is None:        # the field test queues nothing: its report reads field runs
            continue
        camps, missing, notes = planner(mode, available)
        out.campaigns += camps
        out.not_runnable += missing
        out.notes[key] = notes
    if mode == "full":           # the papers' designs first, then what tests their deviations
        for key in papers:
            camps, missing, notes = deviations([key], available)
            out.campaigns += camps
            out.not_runnable += missing
            out.notes.setdefault(key, []).extend(notes)
    return out


def campaign_name(mode: str, key: str) -> str:
    return f"repro-{mode}-{key}"


def campaign_document(mode: str, d: CampaignDesign, window: str | None = None) -> dict[str, Any]:
    """The campaign file of one design (a YAML mapping for `controller.campaign.spec`); `window`
    (e.g. 22:00-07:00) keeps every run inside that daily stretch."""
    doc: dict[str, Any] = {
        "version": 1, "name": campaign_name(mode, d.key),
        "description": f"ctl reproduce --{mode}: {d.title} ({PAPERS[d.paper].reference})",
        "scenario": d.scenario, "fixed": dict(d.fixed)}
    if d.sweep is not None:
        doc["sweep"] = {k: list(v) for k, v in d.sweep.items()}
    if d.cases is not None:
        doc["cases"] = [dict(c) for c in d.cases]
    doc.update({"repetitions": d.repetitions, "order": "random", "pause": d.pause or PAUSES[mode],
                "overhead": d.overhead,
                # an algorithm that will not load on some host is skipped (the report says so), not a
                # reason to stop the rest of the night's reproduction
                "retry": {"refused": {"attempts": 1, "then": "skip"}}})
    if window:
        doc["window"] = window
    return doc


# ---- the deviation experiments as shipped campaign files --------------------------------------------

DEVIATIONS_DIR = "campaigns/deviations"


def deviation_file(key: str) -> str:
    """The shipped campaign file of one deviation experiment (campaigns/deviations/<key>.yaml): the
    campaign `ctl reproduce --deviations` queues, to run on its own with `ctl campaign submit`."""
    e = EXPERIMENTS[key]
    doc = campaign_document("deviations", e.design)
    doc["name"] = e.key
    doc["description"] = f"Deviation experiment: {e.design.title}"
    header = ("# yaml-language-server: $schema=../campaign.schema.json\n"
              f"# Generated by `python -m controller.reproduce.design` from controller/reproduce/hypotheses.py\n"
              f"# ({e.key}); `ctl reproduce --deviations` queues the same campaign and judges the hypotheses it\n"
              "# tests (the report shows each with its numbers). Do not edit: change hypotheses.py and regenerate.\n")
    return header + yaml.safe_dump(doc, sort_keys=False, width=110, allow_unicode=True)


def main(argv: Sequence[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description="Write the deviation experiments' campaign files.")
    ap.add_argument("--dest", default=DEVIATIONS_DIR, help=f"directory (default: {DEVIATIONS_DIR})")
    a = ap.parse_args(argv)
    dest = Path(a.dest)
    dest.mkdir(parents=True, exist_ok=True)
    for key in EXPERIMENTS:
        (dest / f"{key}.yaml").write_text(deviation_file(key))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
