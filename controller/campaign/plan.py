"""Expansion and order of a campaign (pure), and each case checked against the scenario and
the inventory exactly as `ctl run` would check it."""
from __future__ import annotations

import difflib
import itertools
import random
import re
import secrets
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Mapping

from controller import scenarios
from controller.campaign.spec import CampaignFileError, CampaignSpec, _norm
from controller.campaign.timing import format_span
from controller.errors import CtlError
from controller.inventory import Inventory, load_inventory
from controller.results.records import make_run_id
from controller.run.prepare import prepare_run


@dataclass(frozen=True)
class Case:
    index: int                 # 0-based, in file order
    varied: dict[str, str]     # the swept / listed parameters of this case (normalised names)
    values: dict[str, str]     # fixed + varied: everything passed to the scenario

    def argv(self) -> list[str]:
        return case_argv(self.values)

    def label(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.varied.items()) or "(fixed)"


@dataclass(frozen=True)
class PlannedRun:
    seq: int          # 1-based position in the execution order
    case: int         # Case.index
    repetition: int   # 1-based


def case_argv(values: Mapping[str, str]) -> list[str]:
    """Scenario arguments as argv (never a shell string): `--tcp-cc cubic --duration 5s`."""
    out: list[str] = []
    for k, v in values.items():
        out += ["--" + k.replace("_", "-"), v]
    return out


def expand_cases(spec: CampaignSpec) -> list[Case]:
    fixed = {_norm(k): v for k, v in spec.fixed.items()}
    cases: list[Case] = []
    if spec.sweep:
        keys = [_norm(k) for k in spec.sweep]
        for i, combo in enumerate(itertools.product(*spec.sweep.values())):
            varied = dict(zip(keys, combo, strict=True))
            cases.append(Case(i, varied, {**fixed, **varied}))
    elif spec.cases:
        for i, c in enumerate(spec.cases):
            varied = {_norm(k): v for k, v in c.items()}
            cases.append(Case(i, varied, {**fixed, **varied}))
    else:
        cases.append(Case(0, {}, fixed))
    return cases


def order_runs(n_cases: int, repetitions: int, order: str, seed: int | None) -> list[PlannedRun]:
    """Sequential: case by case in file order, repetitions of a case back to back.
    Random: all runs shuffled with `random.Random(seed)` (the seed is recorded, so the order
    can be reproduced; drift of the rack over the night is then not confounded with a case)."""
    pairs = [(c, r) for c in range(n_cases) for r in range(1, repetitions + 1)]
    if order == "random":
        if seed is None:
            raise ValueError("a random order needs a seed (drawn and recorded at submit)")
        random.Random(seed).shuffle(pairs)
    return [PlannedRun(i + 1, c, r) for i, (c, r) in enumerate(pairs)]


def draw_seed() -> int:
    return secrets.randbits(32)


@dataclass(frozen=True)
class ValidatedCase:
    case: Case
    params: dict[str, Any]
    given: dict[str, str]
    duration_s: float


_FLAG = re.compile(r"--([a-z0-9][a-z0-9-]*):")


def case_line(spec: CampaignSpec, lines: Mapping[tuple, int], case: Case, message: str = "") -> int | None:
    """The line a case's error belongs to: the value of the parameter the message names
    (`--rtt: ...`) where this case takes it from (its `cases` entry, the sweep's list item,
    `fixed`), else the case as a whole."""
    m = _FLAG.match(message)
    if m:
        name = _norm(m.group(1))
        places = [(("cases", case.index), spec.cases[case.index])] if spec.cases is not None else []
        places += [(("sweep",), spec.sweep or {}), (("fixed",), spec.fixed)]
        for where, keys in places:
            for k, v in keys.items():
                if _norm(k) != name or where + (k,) not in lines:
                    continue
                if where == ("sweep",) and isinstance(v, list) and case.varied.get(name) in v:
                    return lines.get(where + (k, v.index(case.varied[name])), lines[where + (k,)])
                return lines[where + (k,)]
    if spec.cases is not None:
        return lines.get(("cases", case.index))
    if spec.sweep:
        return lines.get(("sweep",))
    return lines.get(("fixed",)) or lines.get(("scenario",))


def validate_cases(spec: CampaignSpec, path: Path, lines: Mapping[tuple, int], inv: Any) -> list[ValidatedCase]:
    """Every case through the scenario's own parser and planner, and the shapers' validation:
    what `ctl run` would refuse is refused here, naming the file line and the case."""
    try:
        scenario = scenarios.get(spec.scenario)
    except CtlError as exc:
        raise CampaignFileError(f"{path}:{lines.get(('scenario',), '?')}: scenario: {exc.one_line()}") from None
    known = {p.name for p in scenario.all_params()}
    for where, keys in [(("fixed",), spec.fixed)] + [(("sweep",), spec.sweep or {})] + \
            [(("cases", i), c) for i, c in enumerate(spec.cases or [])]:
        for k in keys:
            if _norm(k) not in known:
                line = lines.get(where + (k,), lines.get(where, "?"))
                field_ = ".".join(str(x) for x in where + (k,))
                close = difflib.get_close_matches(_norm(k), sorted(known), n=1, cutoff=0.6)
                raise CampaignFileError(f"{path}:{line}: {field_}: {spec.scenario} has no parameter {k!r} ("
                                        + (f"did you mean {close[0]}? " if close else "")
                                        + f"known: {', '.join(sorted(known))})")
    out = []
    window = spec.window_obj()
    cases = expand_cases(spec)
    hm = spec.report.heatmap
    if hm is not None:
        varied = {k for c in cases for k in c.varied}
        for axis in ("x", "y", "panels"):
            v = getattr(hm, axis)
            if v is not None and _norm(v) not in varied:
                raise CampaignFileError(f"{path}:{lines.get(('report', 'heatmap', axis), '?')}: report.heatmap.{axis}: "
                                        f"{v!r} is not a swept parameter ({', '.join(sorted(varied)) or 'none'})")
    for case in cases:
        try:
            _scenario, params, given, _plan = prepare_run(spec.scenario, case.argv(), inv)
        except CtlError as exc:
            raise CampaignFileError(f"{path}:{case_line(spec, lines, case, exc.one_line()) or '?'}: case "
                                    f"{case.index + 1} ({case.label()}): {exc.one_line()}") from None
        duration = float(params.get("duration") or 0.0)
        if window is not None and duration + spec.overhead_s > window.length_s:
            raise CampaignFileError(f"{path}:{lines.get(('window',), '?')}: window: a run of case {case.index + 1} "
                                    f"takes about {format_span(duration + spec.overhead_s)}, longer than the "
                                    f"window {window.text()}")
        out.append(ValidatedCase(case, params, given, duration))
    return out


def rack_inventories(spec: CampaignSpec, path: Path, lines: Mapping[tuple, int]) -> list[tuple[Path, Inventory]]:
    """The campaign file's `racks`: each inventory file (relative to the campaign file) loaded and
    checked; rack names must differ (the queue tells racks apart by name). Empty: no `racks`."""
    out: list[tuple[Path, Inventory]] = []
    for i, name in enumerate(spec.racks or []):
        p = Path(name).expanduser()
        p = p if p.is_absolute() else (path.parent / p)
        line = lines.get(("racks", i), lines.get(("racks",), "?"))
        try:
            inv = load_inventory(p)
        except CtlError as exc:
            raise CampaignFileError(f"{path}:{line}: racks[{i}]: {exc.one_line()}") from None
        if any(inv.name == o.name for _p, o in out):
            raise CampaignFileError(f"{path}:{line}: racks[{i}]: {p} is rack {inv.name!r} again (each rack once)")
        out.append((p.resolve(), inv))
    return out


def campaign_run_id(scenario: Any, given: Mapping[str, str], params: Mapping[str, Any], campaign_num: int,
                    seq: int, repetition: int, attempt: int, now: float | None = None) -> str:
    """Readable and unique: time, scenario, the set parameters, repetition, campaign/run/attempt."""
    parts = dict(scenario.run_id_parts(given, params))
    parts["rep"] = str(repetition)
    parts[f"c{campaign_num}"] = f"r{seq}a{attempt}"
    return make_run_id(scenario.name, parts, now)
