"""The papers a reproduction covers, and their own numbers (pure data).

Where a scenario module already holds a paper's table (shared_bottleneck.TABLE2/TABLE3,
parallel_streams.PAPER_SHARES) it is used from there; the rest is transcribed here from the
papers (their bibliographic entries and ctl's restatement: docs/experiments.md).
"""
from __future__ import annotations

from dataclasses import dataclass

from controller.scenarios.parallel_streams import PAPER_SHARES
from controller.scenarios.shared_bottleneck import TABLE2, TABLE3


@dataclass(frozen=True)
class Paper:
    key: str
    title: str
    reference: str
    regenerates: str
    queued: bool = True        # False: nothing to queue (the field test reads existing field runs)


PAPERS: dict[str, Paper] = {p.key: p for p in (
    Paper("mcubic", "MCubic: design and evaluation of Multipath Cubic",
          "Ro, Ryu, Choe, J. KIIT 16(8), 2018; docs/experiments.md sections 1-2",
          "Table 1 (Jain's index, distinct bottlenecks), Tables 2-3 (MPTCP / TCP ratio at a shared bottleneck)"),
    Paper("bbrv3", "Throughput of BBRv3 on an emulation testbed",
          "Hong, KISTI; docs/experiments.md section 3",
          "Fig. 1-2: throughput heatmaps over RTT x random loss for Cubic and BBR"),
    Paper("parallel", "Interference between parallel socket connections",
          "Kim, Huh, Hwang; docs/experiments.md section 6",
          "Fig. 4-8: shares of the bottleneck, SC64 + SC2/16/32/64, vs the BNA/IB model"),
    Paper("mptcp-bt", "Multipath TCP for BitTorrent-based applications",
          "Jeon, Roh, Paik, Lee; docs/experiments.md section 4",
          "Fig. 2 (iperf3 TCP vs MPTCP per initial path), Fig. 3 (BitTorrent download, tracker local / global)"),
    Paper("field", "BitTorrent over WiBro: a field test",
          "Kim, Wang, Kim, Kwon, Choi; docs/experiments.md section 5",
          "Table 1 (per scenario: rate, RTT, jitter, CINR) from the latest field runs",
          queued=False),
)}
PAPER_KEYS: tuple[str, ...] = tuple(PAPERS)

# ---- MCubic (Tables 1-3) ----------------------------------------------------------------------

# The paper's algorithm names and the congestion-control names a kernel (or ctl's BPF) registers.
MCUBIC_ROWS: dict[str, str] = {"LIA": "lia", "OLIA": "olia", "wVegas": "wvegas", "MCubic": "mcubic",
                               "Cubic": "cubic"}
COUPLED = ("LIA", "OLIA", "wVegas", "MCubic")
# Table 1: Jain's index for link 2 at 10/20/40/50 Mbit/s (the text says 30, the table 40).
TABLE1 = {"columns": ["10M", "20M", "40M", "50M"],
          "rows": {"LIA": [0.66, 0.7, 0.74, 0.82], "OLIA": [0.66, 0.7, 0.74, 0.82],
                   "wVegas": [0.65, 0.68, 0.72, 0.8], "MCubic": [0.66, 0.7, 0.75, 0.82],
                   "Cubic": [0.63, 0.65, 0.68, 0.75]}}
MCUBIC_TABLES = {"Table 1": TABLE1, "Table 2": TABLE2, "Table 3": TABLE3}


def row_label(cc: str) -> str:
    """The paper's row name of a congestion control (`lia` -> `LIA`); others keep their own name."""
    for label, name in MCUBIC_ROWS.items():
        if name == cc:
            return label
    return cc


def paper_value(table: str, row: str, column: str) -> float | None:
    t = MCUBIC_TABLES.get(table)
    if t is None or row not in t["rows"] or column not in t["columns"]:
        return None
    return t["rows"][row][t["columns"].index(column)]


# ---- BBRv3 (Fig. 1-2) -------------------------------------------------------------------------

BBR_RTTS = ("2ms", "20ms", "40ms", "60ms", "80ms", "100ms")
BBR_LOSSES = ("0%", "0.0046%", "0.01%", "0.025%", "0.1%")
BBR_SHARE_CLAIM_PCT = 70.0      # "BBRv3 keeps >= 70 % of the bottleneck in every case"

# ---- parallel streams (Fig. 8) ----------------------------------------------------------------

PARALLEL_SHARES = PAPER_SHARES  # streams of m0 -> (x1 %, m0 %), next to SC64
# The paper's own largest gap between its measurement and its model (SC64+SC32: 58 % against
# IB = 66.7 %, 8.7 points): "follows the model" is judged with a 10-point tolerance.
MODEL_TOLERANCE_PP = 10.0

# ---- the field test (Table 1) -----------------------------------------------------------------

FIELD_TABLE1 = (
    {"scenario": "Static", "download_kbps": 2579, "rtt_ms": 155, "jitter_ms": 74, "cinr_db": 2.9, "cinr_sd_db": 0.38},
    {"scenario": "Subway", "download_kbps": 2732, "rtt_ms": 118, "jitter_ms": 57, "cinr_db": 21.3, "cinr_sd_db": 9.1},
    {"scenario": "Bus", "download_kbps": 1647, "rtt_ms": 167, "jitter_ms": 128, "cinr_db": 12.4, "cinr_sd_db": 7.4},
)
