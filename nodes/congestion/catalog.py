"""The congestion controls ctl ships as BPF programs, as data.

`name` is the name the kernel registers (what `ss -ti` shows and `iperf3 -C` asks for, at most
15 characters: TCP_CA_NAME_MAX is 16 with the NUL); `source` the file under
nodes/congestion/bpf/; `base` what it is on a plain TCP socket or a single subflow.

Five are the MPTCP papers' coupled algorithms; `bbr3` is the algorithm of the BBRv3 paper,
BBRv3 written from its specification (the IETF CCWG draft, `specification`), one flow at a time
(`coupled` False), with every way it differs from the draft on this kernel in `differences`.
The others are *variants for analysis*: another reading of one of them, built from the same
source with `defines` (one source of truth), registered under its own name, never substituted
for the algorithm it varies (`variant_of`). Every entry says in one sentence which reading of
its paper it implements (`reading`).

The kernel's own `bbr` is BBRv1 on an upstream kernel: it is labelled "bbr (kernel: v1 here)"
wherever ctl prints it (`kernel_label`), never BBRv3; a kernel built with Google's BBRv3 says
so in /sys/module/tcp_bbr/version (hostctl's probe reads it) and is labelled accordingly.

Names inside the kernel: a program's maps are `<short>_conns` (the coupling map) and
`<short>_clash` (the count of subflows refused coupling because a live sibling held their slot;
bbr3, which couples nothing, has neither and keeps its per-socket state in the socket storage
`bbr3_st`), and
in a test build `<short>_trace` and `<short>_tidx`; a test build (-DCTL_TRACE) registers as
`<short>_trace`. BPF object names are cut at 15 characters, so `short` is at most 9 (the name
itself for the papers' five: `lia_trace`, ..., `mcubic_trace`; `mcwrap_trace`,
`mcstretch_trace`, `mcnohs_trace`, `balfloor_trace`, `cubic314_trace` for the variants).

`cubic314` is a variant for analysis of the kernel's own `cubic` (`variant_of` "cubic", which is not
one of ctl's programs): Linux 3.14's tcp_cubic.c as a BPF program, one flow at a time (`coupled`
False; it keeps ctl_cc.h's coupling map, always empty), with every way this kernel's hooks make it
differ from 3.14 in `differences`. It is never called `cubic` where a reader sees it.
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
    coupled: bool = True              # couples the subflows of an MPTCP connection (a `<short>_conns` map)
    specification: str = ""           # the specification it follows, with its revision ("" = the reference)
    differences: tuple[str, ...] = () # every way it differs from that specification on this kernel

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

    @property
    def trace_maps(self) -> tuple[str, ...]:
        """The maps a test build has, by name (the coupling map only where it couples)."""
        return ((self.conns_map,) if self.coupled else ()) + (f"{self.stem}_trace", f"{self.stem}_tidx")


BBR3_DRAFT = "draft-ietf-ccwg-bbr-06"
# Every way bbr3 differs from the draft on this kernel (the same list heads bpf/bbr3.bpf.c).
BBR3_DIFFERENCES = (
    "volumes in packets, not bytes (C.SMSS = one packet), as the kernel counts delivered, lost and in-flight data",
    "RS.tx_in_flight and RS.lost (the kernel keeps neither per packet): from a ring of 16 snapshots of "
    "(delivered, lost, in-flight) taken every cwnd/8 packets delivered, the newest at or before the ACKed "
    "packet's prior_delivered; its in-flight is min(prior_in_flight, cwnd) of that ACK",
    "HandleLostPacket() once per ACK for the data newly marked lost since the last ACK (tp->lost, RACK timer and "
    "RTO marks included), with the ACKed packet's tx_in_flight, lost and app-limited bit in place of the lost "
    "packet's; InflightAtLoss()'s packet size = that newly marked data",
    "Startup's loss exit counts 'discontiguous lost ranges' as ACKs of the round that marked new losses",
    "ECN: no response beyond the draft's 'CE marks count as congestion': CE-marked deliveries count with losses; "
    "ECN is not requested (the host's net.ipv4.tcp_ecn decides); with RFC 3168 feedback each ECE ACK counts",
    "pacing by the kernel's internal TCP pacing (no fq); send quantum = TSO autosizing with min_tso_segs 2",
    "loss recovery is the kernel's: ssthresh() saves cwnd and the model on entry, the RTO's cwnd = in-flight + 1 "
    "is the kernel's, RestoreCwnd() when the CA state is seen leaving recovery, undo = the kernel's undo_cwnd",
    "restart from idle on CA_EVENT_TX_START (first send with nothing in flight), not before every send",
    "Now() = tcp_mstamp (us); one bpf_get_prandom_u32() per call for the probe wait (2 s + 0..1 s) and rounds (0/1)",
    "max_bw in two slots (this and the last ProbeBW cycle), extra_acked an exact max over 10 rounds, min_rtt "
    "through ProbeRTT; RTT samples clamped to 4.2 s",
    "RS.delivery_rate = rate_sample.delivered / interval_us (the kernel's max(send, ACK) interval, samples under "
    "min_rtt dropped); RS.rtt = rate_sample.rtt_us",
    "InitPacingRate() with InitialCwnd 10, redone at the first srtt (as tcp_bbr.c); probe_rtt_min_delay starts at "
    "the initial min_rtt",
    "where the draft is ambiguous: IsTimeToCruise() uses max_bw as written, other BDPs BBR.bw; Drain's cwnd cap "
    "is the pseudocode's (inflight_shortterm only); ProbeBW gains set as each state starts; StartupPacingGain 2.77",
    "on MPTCP each subflow runs its own bbr3, uncoupled",
)

# Every place where this kernel's hooks make cubic314 differ from Linux 3.14's tcp_cubic.c (the same
# list heads bpf/cubic314.bpf.c).
CUBIC314_DIFFERENCES = (
    "the clock: 3.14's tcp_time_stamp (jiffies) and bictcp_clock() (ms) are both the ms of tcp_mstamp, i.e. "
    "jiffies at HZ = 1000 (an update skipped for HZ/32 = 31 ms; t in 2^-10 s from ms); a 3.14 kernel with "
    "HZ = 250 steps in 4 ms and skips for 28 ms",
    "the RTT sample is 6.18's (ack_sample.rtt_us, from tcp_mstamp), converted to ms << 3 as 3.14 does; 3.14 "
    "took it from jiffies or ktime; no ack_delay term (3.14 has none)",
    "tcp_is_cwnd_limited() is 6.18's (3.14's took in_flight and TSO deferral); the kernel decides when "
    "cong_avoid and pkts_acked run (6.18's ACK processing, PRR recovery, RACK loss detection, TSO autosizing "
    "and pacing, none of them 3.14's)",
    "K from an exact integer cube root (3.14: a table lookup and one Newton-Raphson step, average error "
    "0.195 %)",
    "its HyStart exits are counted by the program (the kernel's TcpExtTCPHystart* count only its own cubic)",
    "on MPTCP each subflow runs its own cubic314, uncoupled (the coupling map of ctl_cc.h exists, never used)",
)

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
    Algorithm("bbr3", "bbr3.bpf.c", f"BBRv3 after {BBR3_DRAFT}, BPF",
              f"IETF CCWG {BBR3_DRAFT}, BBR Congestion Control (Cardwell, Swett, Beshay, 6 July 2026); "
              "structure after Linux's tcp_bbr.c (BBRv1)",
              "bbr3 per flow (on MPTCP each subflow its own bbr3, uncoupled)",
              "The draft's state machine (Startup, Drain, ProbeBW DOWN/CRUISE/REFILL/UP, ProbeRTT), max_bw and "
              "min_rtt filters, gains per state, inflight_longterm / inflight_shortterm / bw_shortterm and the "
              "2 % per-round loss-rate check, as cong_control deciding cwnd and pacing; not Google's Linux "
              "BBRv3 and not the kernel's bbr (v1).",
              coupled=False, specification=BBR3_DRAFT, differences=BBR3_DIFFERENCES),
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
    Algorithm("cubic314", "cubic314.bpf.c", "Cubic after Linux 3.14's tcp_cubic.c, BPF; not the kernel's cubic",
              "Linux 3.14 net/ipv4/tcp_cubic.c (Ha, Rhee, Xu, CUBIC, ACM SIGOPS OSR 2008; HyStart: Ha, Rhee, 2008)",
              "Linux 3.14's Cubic per flow (on MPTCP each subflow its own, uncoupled)",
              "3.14's bictcp_update (u32 target, fast convergence, the TCP-friendly region on, cnt divided by the "
              "delayed-ACK ratio, at least 1, applied once per ACK, recomputed at most every HZ/32 while cwnd is "
              "unchanged), 3.14's HyStart (ms clock, ACK train within 2 ms beyond half the minimum RTT, delay "
              "threshold clamp(delay_min/16, 4, 16) ms, the round reset in cong_avoid), beta 717/1024: the "
              "competitor the MCubic paper most likely ran, not the rack kernel's cubic.",
              variant_of="cubic", coupled=False, specification="Linux 3.14 net/ipv4/tcp_cubic.c",
              differences=CUBIC314_DIFFERENCES),
)}

# Congestion controls Linux builds in (never loaded by ctl; listed by `ctl cc list` as such).
KERNEL_BUILTIN = ("reno", "cubic", "bbr")


def bbr_version_label(version: str | None) -> str:
    """What the kernel's `bbr` is, from /sys/module/tcp_bbr/version (pure): Google's BBRv3 tree
    sets MODULE_VERSION to 3; upstream tcp_bbr.c (BBRv1) sets none."""
    v = (version or "").strip()
    return f"v{v}" if v.isdigit() else "v1"


def kernel_label(name: str, bbr_version: str | None = None) -> str:
    """How ctl names a kernel congestion control to a reader: `bbr` with the BBR it is."""
    if name == "bbr":
        return f"bbr (kernel: {bbr_version_label(bbr_version)} here)"
    return name


def coupled_algorithms() -> list[str]:
    """ctl's programs that couple the subflows of an MPTCP connection (all but bbr3)."""
    return [n for n, a in ALGORITHMS.items() if a.coupled]


def shipped(name: str) -> bool:
    return name in ALGORITHMS


def paper_algorithms() -> list[str]:
    """The papers' algorithms (no variants), in catalog order."""
    return [n for n, a in ALGORITHMS.items() if a.variant_of is None]


def variants() -> list[str]:
    return [n for n, a in ALGORITHMS.items() if a.variant_of is not None]
