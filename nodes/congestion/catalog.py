"""The congestion controls ctl ships as BPF programs, as data.

`name` is the name the kernel registers (what `ss -ti` shows and `iperf3 -C` asks for);
`source` the file under nodes/congestion/bpf/; `coupled` whether it couples the subflows of an
MPTCP connection (every one here does; on plain TCP each behaves as its uncoupled base).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

BPF_DIR = Path(__file__).resolve().parent / "bpf"


@dataclass(frozen=True)
class Algorithm:
    name: str
    source: str
    title: str
    reference: str
    base: str            # what it is on a plain TCP socket or a single subflow

    @property
    def path(self) -> Path:
        return BPF_DIR / self.source


ALGORITHMS: dict[str, Algorithm] = {a.name: a for a in (
    Algorithm("lia", "lia.bpf.c", "Linked Increases Algorithm",
              "RFC 6356 (Raiciu, Handley, Wischik, 2011)", "reno"),
    Algorithm("olia", "olia.bpf.c", "Opportunistic Linked Increases Algorithm",
              "Khalili, Gast, Popovic, Le Boudec, IEEE/ACM ToN 21(5), 2013", "reno"),
    Algorithm("balia", "balia.bpf.c", "Balanced Linked Adaptation",
              "Peng, Walid, Hwang, Low, IEEE/ACM ToN 24(1), 2016", "reno"),
    Algorithm("wvegas", "wvegas.bpf.c", "weighted Vegas",
              "Cao, Xu, Fu, IEEE ICNP 2012", "vegas"),
    Algorithm("mcubic", "mcubic.bpf.c", "Multipath Cubic",
              "Ro, Ryu, Choe, the MCubic paper, section III", "cubic (no HyStart, no TCP-friendly region)"),
)}

# Congestion controls Linux builds in (never loaded by ctl; listed by `ctl cc list` as such).
KERNEL_BUILTIN = ("reno", "cubic", "bbr")


def shipped(name: str) -> bool:
    return name in ALGORITHMS
