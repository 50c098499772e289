"""One campaign of a reproduction, as data (pure): the scenario, the fixed parameters, the sweep or
the cases, the repetitions; and how long its runs send traffic (for the plan's rack time)."""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping

from controller.units import parse_duration, parse_rate, parse_size


@dataclass(frozen=True)
class CampaignDesign:
    paper: str
    key: str                          # what the report and compare read it as: mcubic-table1, bbrv3, ...
    title: str
    scenario: str
    fixed: dict[str, str]
    sweep: dict[str, list[str]] | None = None
    cases: list[dict[str, str]] | None = None
    repetitions: int = 1
    pause: str | None = None          # None: the mode's (PAUSES)
    overhead: str = "10s"             # the first estimate; the store learns the real one per scenario and rack

    def case_values(self) -> list[dict[str, str]]:
        """Every case's parameters (fixed + varied), in file order (pure expansion)."""
        if self.cases is not None:
            return [{**self.fixed, **c} for c in self.cases]
        out: list[dict[str, str]] = [dict(self.fixed)]
        for k, vs in (self.sweep or {}).items():
            out = [{**o, k: v} for o in out for v in vs]
        return out

    def run_count(self) -> int:
        return len(self.case_values()) * self.repetitions

    def traffic_s(self) -> float:
        """Seconds of traffic in all its runs (a BitTorrent step estimated from its payload)."""
        return sum(traffic_estimate(self.scenario, v) for v in self.case_values()) * self.repetitions


def traffic_estimate(scenario: str, v: Mapping[str, str]) -> float:
    """Seconds one run of a case sends traffic (pure; for the plan's rack time and finish)."""
    if scenario == "mptcp-bittorrent":
        reps = int(v.get("repetitions", "10"))
        if v.get("step") == "iperf3":
            paths = 3 if v.get("initial", "all") == "all" else 1
            return paths * 2 * reps * (parse_duration(v.get("duration", "10s")) + 3.0)
        size_bits = parse_size(v.get("size", "100MiB")) * 8
        rate = parse_rate(v.get("global_bw", "5M") if v.get("tracker") == "global" else v.get("local_bw", "20M"))
        return 2 * reps * (size_bits / (0.8 * rate) + 8.0)       # both protocols; start-up and seeding
    return parse_duration(v.get("duration", "60s" if scenario == "rtt-loss-sweep" else "40s"))
