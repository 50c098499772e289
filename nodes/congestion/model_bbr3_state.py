"""bbr3's state, constants and the values of one call, as nodes/congestion/bpf/bbr3.bpf.c lays them
out (`struct bbr3`, `struct b3_in`, `struct b3_out`, `struct b3_ctx`): the vocabulary of the
reference model nodes/congestion/model_bbr3.py, which re-exports every name here.

Units are the kernel's: packets, microseconds, bandwidth in packets per microsecond << 24;
gains in percent; thresholds exact fractions (see model_bbr3.py).
"""
from __future__ import annotations

from dataclasses import dataclass, field, fields, replace

U32 = 0xFFFFFFFF
U64 = (1 << 64) - 1
INF = U32                      # the draft's "Infinity" for a u32 quantity
BW_SCALE = 24
BW_UNIT = 1 << BW_SCALE
BW_MAX = U32 - 1               # a bandwidth sample is clamped below INF
RTT_MAX_US = 1 << 22           # RTT samples are clamped to 4.2 s (keeps bw * rtt * gain in 64 bits)
USEC_PER_SEC = 1_000_000

# ---- constants of the draft (section 2), in the units above --------------------------------------
STARTUP_PACING_GAIN = 277      # 2.77 (4 ln 2)                        BBR.StartupPacingGain
DRAIN_PACING_GAIN = 50         # 0.5                                  BBR.DrainPacingGain
DEFAULT_CWND_GAIN = 200        # 2                                    BBR.DefaultCwndGain
PROBE_DOWN_PACING_GAIN = 90    # 0.90                                 ProbeBW_DOWN (5.3.3.1)
CRUISE_PACING_GAIN = 100       # 1.0                                  ProbeBW_CRUISE, REFILL
PROBE_UP_PACING_GAIN = 125     # 1.25                                 ProbeBW_UP (5.3.3.5)
PROBE_UP_CWND_GAIN = 225       # 2.25
PROBE_RTT_CWND_GAIN = 50       # 0.5                                  BBR.ProbeRTTCwndGain
PACING_MARGIN_PERCENT = 1      #                                      BBR.PacingMarginPercent
LOSS_THRESH = (2, 100)         # 2 %                                  BBR.LossThresh
BETA = (7, 10)                 # 0.7                                  BBR.Beta
HEADROOM = (15, 100)           # 0.15                                 BBR.Headroom
MIN_PIPE_CWND = 4              # 4 * C.SMSS                           BBR.MinPipeCwnd
INITIAL_CWND = 10              # C.InitialCwnd (Linux TCP_INIT_CWND)
FULL_BW_GROWTH = (5, 4)        # 1.25: "significant" growth in Startup / ProbeBW_UP
FULL_BW_ROUNDS = 3             # rounds without it: the pipe is full
STARTUP_FULL_LOSS_CNT = 6      # BBRStartupFullLossCnt
EXTRA_ACKED_FILTER_LEN = 10    # BBR.ExtraAckedFilterLen (rounds)
MIN_RTT_FILTER_US = 10 * USEC_PER_SEC      # BBR.MinRTTFilterLen
PROBE_RTT_INTERVAL_US = 5 * USEC_PER_SEC   # BBR.ProbeRTTInterval
PROBE_RTT_DURATION_US = 200_000            # BBR.ProbeRTTDuration
PROBE_WAIT_BASE_US = 2 * USEC_PER_SEC      # PickProbeWait: 2 s + a random 0..1 s
PROBE_WAIT_RAND_US = USEC_PER_SEC
RENO_ROUNDS_MAX = 63           # IsRenoCoexistenceProbeTime
SEND_QUANTUM_MAX_BYTES = 65536 # SetSendQuantum: at most 64 KB, at least 2 SMSS
SEND_QUANTUM_MIN = 2

# ring of (delivered, lost, in-flight) snapshots that stands in for the per-packet P.lost and
# P.tx_in_flight this kernel does not keep (see bbr3.bpf.c, "Differences")
SNAPS = 16
SNAP_STEP_SHIFT = 3            # a snapshot every cwnd / 8 packets delivered

# states (BBR.state)
STARTUP, DRAIN, PROBE_BW_DOWN, PROBE_BW_CRUISE, PROBE_BW_REFILL, PROBE_BW_UP, PROBE_RTT = range(7)
STATE_NONE = 7                 # BBR.undo_state "None"
STATE_NAMES = ("Startup", "Drain", "ProbeBW_DOWN", "ProbeBW_CRUISE", "ProbeBW_REFILL", "ProbeBW_UP", "ProbeRTT",
               "None")
# BBR.ack_phase
ACKS_INIT, ACKS_REFILLING, ACKS_PROBE_STARTING, ACKS_PROBE_FEEDBACK, ACKS_PROBE_STOPPING = range(5)
# the kernel's TCP_CA_* states (include/net/tcp.h) and CA_EVENT_TX_START
CA_OPEN, CA_DISORDER, CA_CWR, CA_RECOVERY, CA_LOSS = range(5)
CA_EVENT_TX_START = 0


def s32(x: int) -> int:
    x &= U32
    return x - (1 << 32) if x & 0x80000000 else x


def cdiv(a: int, b: int) -> int:
    """C's signed division (truncates toward zero)."""
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


@dataclass
class Bbr3:
    """struct bbr3 of bbr3.bpf.c, field for field and in its order (u64 first, then u32)."""

    min_rtt_stamp: int = 0
    probe_rtt_min_stamp: int = 0
    probe_rtt_done_stamp: int = 0
    cycle_stamp: int = 0
    extra_acked_interval_start: int = 0
    initialized: int = 0
    state: int = 0
    pacing_gain: int = 0
    cwnd_gain: int = 0
    round_count: int = 0
    next_round_delivered: int = 0
    round_start: int = 0
    rounds_since_probe_up: int = 0
    cycle_count: int = 0
    bw_hi: list[int] = field(default_factory=lambda: [0, 0])
    bw: int = 0
    bw_shortterm: int = 0
    bw_latest: int = 0
    min_rtt_us: int = 0
    probe_rtt_min_us: int = 0
    probe_rtt_expired: int = 0
    probe_rtt_round_done: int = 0
    prior_cwnd: int = 0
    idle_restart: int = 0
    full_bw: int = 0
    full_bw_count: int = 0
    full_bw_now: int = 0
    full_bw_reached: int = 0
    inflight_longterm: int = 0
    inflight_shortterm: int = 0
    inflight_latest: int = 0
    max_inflight: int = 0
    send_quantum: int = 0
    loss_round_delivered: int = 0
    loss_round_start: int = 0
    is_loss_in_round: int = 0
    loss_events_in_round: int = 0
    bw_probe_up_acked: int = 0
    probe_up_acked_per_inc: int = 0
    bw_probe_up_rounds: int = 0
    bw_probe_wait_us: int = 0
    ack_phase: int = 0
    is_bw_probe_sample: int = 0
    prev_probe_too_high: int = 0
    prev_probe_precautionary: int = 0
    drain_start_round: int = 0
    extra_acked_delivered: int = 0
    extra_acked: int = 0
    xa: list[int] = field(default_factory=lambda: [0] * EXTRA_ACKED_FILTER_LEN)
    undo_state: int = 0
    undo_bw_shortterm: int = 0
    undo_inflight_shortterm: int = 0
    undo_inflight_longterm: int = 0
    prev_ca_state: int = 0
    has_seen_rtt: int = 0
    marks_seen: int = 0
    last_key: int = 0
    snap_next: int = 0
    snap_used: int = 0
    snap: list[list[int]] = field(default_factory=lambda: [[0, 0, 0] for _ in range(SNAPS)])

    def copy(self) -> "Bbr3":
        return replace(self, bw_hi=list(self.bw_hi), xa=list(self.xa), snap=[list(s) for s in self.snap])

    @property
    def max_bw(self) -> int:
        return max(self.bw_hi)

    def differences(self, other: "Bbr3") -> dict[str, tuple]:
        """field -> (self's, other's) for every field that differs."""
        return {f.name: (getattr(self, f.name), getattr(other, f.name)) for f in fields(self)
                if getattr(self, f.name) != getattr(other, f.name)}


@dataclass(frozen=True)
class Inputs:
    """struct b3_in: what the kernel gave one call (read from the socket and the rate sample)."""

    now: int = 0                  # tp->tcp_mstamp (us)
    pacing_rate: int = 0          # sk->sk_pacing_rate before the call (bytes/s)
    max_pacing_rate: int = U64    # sk->sk_max_pacing_rate
    rs_interval_us: int = -1      # rate_sample.interval_us (-1: no valid sample)
    rs_rtt_us: int = -1           # rate_sample.rtt_us (-1: none)
    delivered: int = 0            # tp->delivered (packets)
    lost: int = 0                 # tp->lost (packets)
    delivered_ce: int = 0         # tp->delivered_ce
    inflight: int = 0             # tcp_packets_in_flight()
    cwnd: int = INITIAL_CWND      # tp->snd_cwnd
    cwnd_clamp: int = U32         # tp->snd_cwnd_clamp
    mss: int = 1448               # tp->mss_cache
    ca_state: int = CA_OPEN       # icsk_ca_state
    is_cwnd_limited: int = 0      # tp->is_cwnd_limited
    sack_ok: int = 1              # tp->rx_opt.sack_ok != 0
    srtt_us: int = 0              # tp->srtt_us >> 3
    app_limited: int = 0          # tp->app_limited
    rand: int = 0                 # bpf_get_prandom_u32(), drawn once per call
    rs_delivered: int = 0         # rate_sample.delivered (-1: invalid)
    rs_losses: int = 0            # rate_sample.losses
    rs_acked_sacked: int = 0      # rate_sample.acked_sacked (RS.newly_acked)
    rs_prior_in_flight: int = 0   # rate_sample.prior_in_flight
    rs_prior_delivered: int = 0   # rate_sample.prior_delivered (P.delivered)
    rs_is_app_limited: int = 0    # rate_sample.is_app_limited
    event: int = 0                # cwnd_event: the tcp_ca_event
    ssthresh: int = 0             # tp->snd_ssthresh


@dataclass
class Outputs:
    """struct b3_out: what the call wrote to the socket, and the loss check it made."""

    pacing_rate: int = 0          # sk->sk_pacing_rate after
    cwnd: int = 0                 # tp->snd_cwnd after
    app_limited: int = 0          # tp->app_limited after
    ret: int = 0                  # the hook's return value (ssthresh, undo_cwnd)
    tx_in_flight: int = 0         # RS.tx_in_flight this call used (from the snapshot ring)
    rs_lost: int = 0              # RS.lost this call used
    newly_marked: int = 0         # packets newly marked lost or CE on this ACK
    too_high: int = 0             # 1: HandleInflightTooHigh ran; 2: Startup exited on high loss
    inflight_at_loss: int = 0     # InflightAtLoss() when too_high == 1
    rate: int = 0                 # RS.delivery_rate (packets/us << 24; 0: none)


@dataclass
class Ctx:
    """The working copy of one call: inputs, the socket values being decided, the rate sample."""

    i: Inputs
    o: Outputs
    cwnd: int
    pacing_rate: int
    app_limited: int
    rate: int = 0
    rs_delivered: int = 0
    valid: bool = False
    tx_in_flight: int = 0
    rs_lost: int = 0
    newly_marked: int = 0
