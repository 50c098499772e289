"""Turn a reproduction's design into campaigns: write each campaign file, check it exactly as
`ctl campaign plan` does (every case through the scenario's own parser and planner), estimate
its rack time, and submit it to the campaign store. The campaigns then run like any other, in
the order submitted (the scheduler takes the lowest campaign number first).
"""
from __future__ import annotations

import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping, Sequence

import yaml

from controller.campaign.backends import open_store, store_exists
from controller.campaign.plan import PlannedRun, ValidatedCase, draw_seed, order_runs, validate_cases
from controller.campaign.spec import CampaignSpec, load_campaign
from controller.campaign.store import campaign_dir
from controller.campaign.timing import estimate_finish, learned_overhead
from controller.errors import UsageError
from controller.inventory import Inventory
from controller.reproduce.campaign_design import traffic_estimate
from controller.reproduce.design import CampaignDesign, ReproductionDesign, campaign_document
from controller.reproduce.record import Reproduction, replace_campaign


@dataclass
class PlannedCampaign:
    design: CampaignDesign
    path: Path
    text: str
    spec: CampaignSpec
    validated: list[ValidatedCase]
    seed: int | None
    planned: list[PlannedRun]
    durations: dict[int, float]       # case index -> seconds of traffic of one run
    overhead_s: float
    learned_from: int

    @property
    def runs(self) -> int:
        return len(self.planned)

    @property
    def traffic_s(self) -> float:
        return sum(self.durations[p.case] for p in self.planned)

    def per_run_s(self) -> list[float]:
        return [self.durations[p.case] + self.overhead_s for p in self.planned]

    @property
    def rack_s(self) -> float:
        return sum(self.per_run_s()) + self.spec.pause_s * max(0, self.runs - 1)


def overhead_note(planned: Sequence[PlannedCampaign]) -> str:
    """Where each scenario's set-up/restore time per run came from, once per scenario: the median
    learned from this rack's earlier runs, or the campaign files' `overhead`."""
    learned: dict[str, str] = {}
    declared: dict[str, set[float]] = {}
    for p in planned:
        sc = p.spec.scenario
        if p.learned_from:
            learned.setdefault(sc, f"{sc} {p.overhead_s:.0f} s, learned from {p.learned_from} runs")
        else:
            declared.setdefault(sc, set()).add(p.overhead_s)
    parts = list(learned.values())
    if declared:
        shown = ", ".join(f"{sc} {'/'.join(f'{v:.0f}' for v in sorted(vs))} s" for sc, vs in declared.items())
        parts.append(f"the campaign files' `overhead`: {shown}")
    return "; ".join(parts)


def write_campaign_file(directory: Path, mode: str, d: CampaignDesign, window: str | None = None) -> Path:
    doc = campaign_document(mode, d, window)
    path = directory / f"{doc['name']}.yaml"
    header = (f"# Written by `ctl reproduce --{mode}`: {d.title}.\n"
              "# An ordinary campaign file: `ctl campaign plan FILE` shows the same runs.\n")
    path.write_text(header + yaml.safe_dump(doc, sort_keys=False, width=110))
    return path


def overhead_samples(scenarios: Sequence[str], inv: Inventory) -> dict[str, list[float]]:
    """Per scenario, the store's measured set-up/restore seconds of its runs on this rack."""
    samples: dict[str, list[float]] = {}
    if store_exists():
        store = open_store()
        try:
            for sc in scenarios:
                samples.setdefault(sc, store.overhead_samples(sc, inv.name))
        finally:
            store.close()
    return samples


def plan_file(d: CampaignDesign, path: Path, inv: Inventory, samples: dict[str, list[float]]) -> PlannedCampaign:
    """Load and check one campaign file exactly as `ctl campaign plan` does, draw its order and
    estimate its rack time (nothing is submitted)."""
    spec, lines, text = load_campaign(path)
    validated = validate_cases(spec, path, lines, inv)
    seed = spec.seed if spec.seed is not None else (draw_seed() if spec.order == "random" else None)
    planned = order_runs(len(validated), spec.repetitions, spec.order, seed)
    # the scenario's own duration, or (a BitTorrent step) an estimate from its payload and rates
    durations = {v.case.index: traffic_estimate(spec.scenario, v.case.values) for v in validated}
    got = samples.get(spec.scenario, [])
    overhead = learned_overhead(got, spec.overhead_s)
    return PlannedCampaign(d, path, text, spec, validated, seed, planned, durations, overhead,
                           len(got) if overhead != spec.overhead_s else 0)


def prepare(rd: ReproductionDesign, inv: Inventory, directory: Path, window: str | None = None) -> list[PlannedCampaign]:
    """Write, load and check every campaign of the design (nothing is submitted)."""
    directory.mkdir(parents=True, exist_ok=True)
    samples = overhead_samples([d.scenario for d in rd.campaigns], inv)
    return [plan_file(d, write_campaign_file(directory, rd.mode, d, window), inv, samples) for d in rd.campaigns]


def replan(entry: Mapping[str, Any], inv: Inventory) -> PlannedCampaign:
    """A reproduction's campaign planned again from the file it was submitted with (the file
    under the reproduction's directory, not today's design: the same cases and repetitions; a
    fresh random order)."""
    path = Path(str(entry["file"]))
    if not path.is_file():
        raise UsageError(f"campaign {entry['key']}: its file {path} is gone")
    spec, _, _ = load_campaign(path)
    # Only key, paper and title of the design are read after planning (the record, the plan table).
    d = CampaignDesign(paper=str(entry["paper"]), key=str(entry["key"]), title=str(entry["title"]),
                       scenario=spec.scenario, fixed={})
    return plan_file(d, path, inv, overhead_samples([spec.scenario], inv))


def finish_times(planned: Sequence[PlannedCampaign], now: float, not_before: float | None) -> list[float]:
    """When each campaign is done, run one after the other from `now` (or `not_before`)."""
    t = max(now, not_before or now)
    out = []
    for p in planned:
        t = estimate_finish(t, p.per_run_s(), p.spec.pause_s, p.spec.window_obj())
        out.append(t)
    return out


def submit(r: Reproduction, planned: Sequence[PlannedCampaign], *, inventory_path: Path, inv: Inventory,
           runs_root: Path, not_before: float | None, replacing: Mapping[str, Any] | None = None) -> list[Any]:
    """Queue every campaign (one store transaction each) and record them in the reproduction.
    `replacing`: the record's entry of a cancelled campaign that the (one) planned campaign
    replaces in the reproduction (record.replace_campaign)."""
    store = open_store()
    rows = []
    try:
        for p in planned:
            c = store.submit(spec=p.spec, file_path=p.path.resolve(), file_text=p.text,
                             inventory_path=inventory_path.resolve(), inventory_name=inv.name, runs_root=runs_root,
                             seed=p.seed, not_before=not_before, cases=[v.case for v in p.validated],
                             planned=p.planned, durations=p.durations)
            d = campaign_dir(c.id)
            d.mkdir(parents=True, exist_ok=True)
            (d / "campaign.yaml").write_text(p.text)
            again = f", queued again for cancelled campaign #{replacing['num']}" if replacing else ""
            store.event(c.num, "reproduction", f"part of reproduction {r.id} ({p.design.key}){again}")
            entry = {"key": p.design.key, "paper": p.design.paper, "title": p.design.title,
                     "id": c.id, "num": c.num, "file": str(p.path), "runs": p.runs, "submitted": time.time()}
            if replacing:
                replace_campaign(r, replacing, entry)
            else:
                r.campaigns.append(entry)
            rows.append(c)
    finally:
        store.close()
    return rows
