"""The summary of a run that did not complete (aborted by a signal or a lost host, or failed):
what was measured, clearly marked partial, with counts.

Traffic made of independent units run one after the other (mptcp-bittorrent's downloads and
iperf3 tests) can be summarized over the units that ran to their own end: the scenario says
so by giving a `summarize_partial` (usually its own `summarize`), which then sees only those
units. Concurrent flows cut short are another experiment than the one planned (a fairness
index over half a run means nothing), so other scenarios get only the generic part: which
flows ended, how long traffic ran, and the bytes each link carried over that time.
"""
from __future__ import annotations

import dataclasses
import time
from pathlib import Path
from typing import Any

from controller.results.summary import link_throughput
from controller.run.late import FIGURES_LOCK
from controller.scenarios.base import RunData, Scenario


def partial_counts(flows: list[Any]) -> dict:
    """How many traffic units were planned, ran to their end, and completed without error."""
    ended = [r for r in flows if getattr(r, "ended", False)]
    completed = [r for r in ended if getattr(r, "error", None) is None and getattr(r, "complete", True)]
    return {"planned": len(flows), "ended": len(ended), "completed": len(completed),
            "completed_names": [_name(r) for r in completed],
            "not_ended": [_name(r) for r in flows if not getattr(r, "ended", False)]}


def _name(r: Any) -> str:
    return str(getattr(r, "name", None) or r.spec.name)


def partial_summary(scenario: Scenario, data: RunData, status: str, error: str | None,
                    out_dir: Path | None = None, unit: str = "flows") -> tuple[dict, list[str]]:
    """(summary.json of a run that ended `status`, figures written). `unit` names what the
    traffic is made of ("downloads", "iperf3 tests", "flows"). Never raises: a summary that
    cannot be made from partial data is reported in it, not lost with the record."""
    counts = partial_counts(list(data.flows))
    part = {"status": status, "reason": error, "unit": unit, **counts,
            "traffic_s": round(max(0.0, data.window[1] - data.window[0]), 3) if data.window[0] else 0.0}
    base: dict[str, Any] = {"partial": True, "partial_run": part, "status": status, "points": len(data.points)}
    figures: list[str] = []
    hook = getattr(scenario, "summarize_partial", None)
    ended = [r for r in data.flows if getattr(r, "ended", False)]
    if hook is not None and ended:
        try:
            s = hook(dataclasses.replace(data, flows=ended))
        except Exception as exc:  # partial data the scenario could not summarize: say so, keep the rest
            part["summary_error"] = f"{type(exc).__name__}: {exc}"[:300]
        else:
            part["summarized"] = "scenario"
            # The summary is of the units that ended; the run is still not the one planned, so
            # it never counts as a valid result (readers that keep only valid summaries skip it).
            part["units_valid"] = s.get("valid")
            reasons = [f"partial run ({status}: {error or 'no reason recorded'}): {counts['completed']} of "
                       f"{counts['planned']} {unit} completed"] + list(s.get("invalid_reasons") or [])
            out = {**s, **base, "valid": False, "invalid_reasons": reasons}
            if out_dir is not None:
                try:
                    # Not behind the clock gate (QUIET): this runs on the event loop after the run's
                    # last clock exchange, and in a campaign before the next health check. The lock:
                    # a campaign without a figure worker may still draw a previous run's in a thread.
                    with FIGURES_LOCK:
                        figures = scenario.figures(dataclasses.replace(data, flows=ended), out, out_dir)
                except Exception as exc:  # a plot must never lose the numbers
                    part["figure_error"] = f"{type(exc).__name__}: {exc}"[:300]
            return out, figures
    part["summarized"] = "generic"
    if data.window[0] and data.window[1] > data.window[0]:
        try:
            base["links"] = link_throughput(data.points, data.inventory, data.window)
        except Exception as exc:
            part["summary_error"] = f"{type(exc).__name__}: {exc}"[:300]
    return base, figures


def partial_line(summary: dict) -> str:
    """One line saying what a partial summary covers (for the terminal and stderr)."""
    p = summary.get("partial_run") or {}
    what = f"{p.get('completed', 0)} of {p.get('planned', 0)} {p.get('unit', 'flows')} completed"
    if p.get("summarized") == "scenario":
        what += " and are summarized above"
    elif p.get("planned"):
        what += "; concurrent flows cut short are not summarized (only per-link totals are kept)"
    return f"PARTIAL ({p.get('status', '?')}: {p.get('reason') or 'no reason recorded'}): {what}"


def traffic_window(t0: float | None, t1: float | None) -> tuple[float, float]:
    """The traffic window of a run cut short: from the first client's start to now."""
    if not t0:
        return (0.0, 0.0)
    return (t0, t1 if t1 else time.time())
