"""The congestion controls ctl ships as BPF programs, as data.

`name` is the name the kernel registers (what `ss -ti` shows and `iperf3 -C` asks for, at most
15 characters: TCP_CA_NAME_MAX is 16 with the NUL); `source` the file under
nodes/congestion/bpf/; `base` what it is on a plain TCP socket or a single subflow.

Five are the papers' algorithms. The others are *variants for analysis*: another reading of
one of them, built from the same source with `defines` (one source of truth), registered under
its own name, never substituted for the algorithm it varies (`variant_of`). Every entry says in
one sentence which reading of its paper it implements (`reading`).

Names inside the kernel: a program's maps are `<short>_conns` (the coupling map), and in a test
build `<short>_trace` and `<short>_tidx`; a test build (-DCTL_TRACE) registers as
`<short>_trace`. BPF object names are cut at 15 characters, so `short` is at most 9 (the name
itself for the papers' five: `lia_trace`, ..., `mcubic_trace`; `mcwrap_trace`,
`mcstretch_trace`, `mcnohs_trace`, `balfloor_trace` for the variants).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

BPF_DIR = Path(__file__).resolve().parent / "bpf"
NAME_MAX = 15            # TCP_CA_NAME_MAX - 1 (include/net/tcp.h); also BPF_OBJ_NAME_LEN - 1
SHORT_MAX = NAME_MAX - len("_conns")


@dataclass(frozen=True)
class Algorithm:
    name: str
    source: str
    title: str
    reference: str
    base: str            # what it is on a plain TCP socket or a single subflow
    reading: str         # one sentence: which reading of the paper this program implements
    variant_of: str | None = None     # None: one of the papers' algorithms
    defines: tuple[str, ...] = ()     # clang -D flags that select this reading from `source`
    short: str = ""                   # map-name prefix and trace-name stem ("" = name)

    @property
    def path(self) -> Path:
        return BPF_DIR / self.source

    @property
    def stem(self) -> str:
        return self.short or self.name

    @property
    def trace_name(self) -> str:
        """The name a test build (-DCTL_TRACE) registers under."""
        return f"{self.stem}_trace"

    @property
    def conns_map(self) -> str:
        return f"{self.stem}_conns"

    @property
    def is_variant(self) -> bool:
        return self.variant_of is not None


_CUBIC_SS = "cubic with HyStart (Linux 6.18's ack train and delay detection), no TCP-friendly region"

ALGORITHMS: dict[str, Algorithm] = {a.name: a for a in (
    Algorithm("lia", "lia.bpf.c", "Linked Increases Algorithm",
              "RFC 6356 (Raiciu, Handley, Wischik, 2011)", "reno",
              "RFC 6356 section 3 as written: each subflow's increase is min(alpha/w_total, 1/w_i) per packet "
              "acked, a loss halves the subflow's window."),
    Algorithm("olia", "olia.bpf.c", "Opportunistic Linked Increases Algorithm",
              "Khalili, Gast, Popovic, Le Boudec, IEEE/ACM ToN 21(5), 2013", "reno",
              "The paper's increase (w_r/rtt_r^2)/(sum w_p/rtt_p)^2 + alpha_r/w_r with its sets M and B, the "
              "inter-loss distance the bytes acked between the last losses (the larger of the last two); a "
              "loss halves the subflow's window."),
    Algorithm("balia", "balia.bpf.c", "Balanced Linked Adaptation",
              "Peng, Walid, Hwang, Low, IEEE/ACM ToN 24(1), 2016", "reno",
              "The paper's increase and its decrease w_r/2 * min(alpha_r, 3/2) with alpha_r = max_k x_k / x_r "
              "kept fractional (10 bits), as the paper writes it: a loss cuts between w/2 and 0.75 w."),
    Algorithm("wvegas", "wvegas.bpf.c", "weighted Vegas",
              "Cao, Xu, Fu, IEEE ICNP 2012", "vegas",
              "The paper's per-round weighted Vegas: alpha_r = max(2, weight_r * total_alpha) from the "
              "subflow's share of the connection's rate, the queue drained when its delay doubles."),
    Algorithm("mcubic", "mcubic.bpf.c", "Multipath Cubic",
              "Ro, Ryu, Choe, the MCubic paper, section III", _CUBIC_SS,
              "Eq. 10 read literally: the target W_max - C (K_mptcp - t)^3 is clamped at 0 below the origin, so "
              "after its own loss a coupled subflow (K_mptcp > K_i) holds its window flat (cnt = 100 cwnd) "
              "for about K_i^2 * sum_{j!=i} 1/K_j seconds before the curve climbs past it."),
    Algorithm("mcubic_wrap", "mcubic.bpf.c", "Multipath Cubic, Linux 3.14 u32 arithmetic",
              "Ro, Ryu, Choe, the MCubic paper, section 4.1; Linux 3.14 net/ipv4/tcp_cubic.c bictcp_update()",
              _CUBIC_SS,
              "K_mptcp put into Linux 3.14's bictcp_update() unguarded (paper section 4.1): below the origin "
              "bic_target = origin - delta in u32 wraps to nearly 2^32, cnt = cwnd/(target - cwnd) = 0 becomes "
              "3.14's minimum cnt of 1 (a window increment every second ACK), so the window regrows almost "
              "exponentially after each loss (3.14's cnt rules, delayed-ACK ratio and per-ACK counting).",
              variant_of="mcubic", defines=("MC_WRAP",), short="mcwrap"),
    Algorithm("mcubic_stretch", "mcubic.bpf.c", "Multipath Cubic, concave part stretched",
              "Ro, Ryu, Choe, the MCubic paper, section III (a reading ctl defines, not the paper's)",
              _CUBIC_SS,
              "Below the origin the curve runs from the window after the loss W_0 at t = 0 to W_max at "
              "t = K_mptcp, W(t) = W_max - (W_max - W_0) ((K_mptcp - t)/K_mptcp)^3 (an effective "
              "C_i = (W_max - W_0)/K_mptcp^3), and Cubic's convex part C (t - K_mptcp)^3 + W_max after it.",
              variant_of="mcubic", defines=("MC_STRETCH",), short="mcstretch"),
    Algorithm("mcubic_nohs", "mcubic.bpf.c", "Multipath Cubic without HyStart",
              "Ro, Ryu, Choe, the MCubic paper, section III", "cubic (no HyStart, no TCP-friendly region)",
              "mcubic (eq. 10 literally, clamped at 0) with slow start left to ssthresh and losses, no HyStart: "
              "to test whether slow start matters.",
              variant_of="mcubic", defines=("MC_NOHS",), short="mcnohs"),
    Algorithm("balia_floor", "balia.bpf.c", "Balanced Linked Adaptation, the authors' integer alpha",
              "Peng, Walid, Hwang, Low; their Linux code, multipath-tcp/mptcp branch mptcp_v0.96, "
              "net/mptcp/mptcp_balia.c mptcp_balia_recalc_ai()", "reno",
              "balia with the decrease of the authors' Linux code: alpha = div64_u64(max_rate, rate) floored to "
              "an integer before min(alpha, 3/2), so a loss cuts w/2 (alpha < 2) or 0.75 w (alpha >= 2) and "
              "nothing in between.",
              variant_of="balia", defines=("BALIA_FLOOR",), short="balfloor"),
)}

# Congestion controls Linux builds in (never loaded by ctl; listed by `ctl cc list` as such).
KERNEL_BUILTIN = ("reno", "cubic", "bbr")


def shipped(name: str) -> bool:
    return name in ALGORITHMS


def paper_algorithms() -> list[str]:
    """The papers' algorithms (no variants), in catalog order."""
    return [n for n, a in ALGORITHMS.items() if a.variant_of is None]


def variants() -> list[str]:
    return [n for n, a in ALGORITHMS.items() if a.variant_of is not None]
