"""What the papers' texts establish, as `Citation`s: the paper's own words (Korean, quoted verbatim;
the tests check each quote against the papers) or the source file a statement rests on, and what
follows from them (pure data; controller.reproduce.hypotheses re-exports every name)."""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class Citation:
    source: str          # where: the paper and section, or the source file
    quote: str           # verbatim
    says: str            # what follows from it (English)

    def to_json(self) -> dict:
        return {"source": self.source, "quote": self.quote, "says": self.says}


# The MCubic paper's single-path flow is TCP Cubic, in both scenarios (a test pins these quotes to
# the seed's text).
MCUBIC_TCP_IS_CUBIC_421 = Citation(
    "MCubic paper, section 4.2.1 (distinct bottlenecks, Table 1)",
    "플로우 A1-B1과 A2-B2 플로우 서로 분리된 병목 링크를 갖고, 단일 경로 TCP Cubic과 링크를 공유한다",
    "each bottleneck is shared with a single-path TCP Cubic flow")
MCUBIC_TCP_IS_CUBIC_422 = Citation(
    "MCubic paper, section 4.2.2 (shared bottleneck, Tables 2 and 3)",
    "MPTCP와 단일 경로 TCP Cubic 간에 병목 링크를 공유하는 구성을 하였다",
    "the single-path flow of Tables 2 and 3 is TCP Cubic, and ctl's scenarios run it as Cubic too "
    "(`tcp-cc: cubic`); but the paper's Cubic is most likely Linux 3.14.17's (MCubic was built on that kernel, "
    "section 4.1; the TCP host's kernel is not named) and ctl's is the rack kernel's "
    "(6.18 here), which differs from it (HyStart among others): the competitor's version is a hypothesis "
    "(mcubic-competitor-version), tested with cubic314, a BPF build of 3.14's tcp_cubic.c, as the competitor at "
    "every delay of Tables 2 and 3 with MCubic and LIA, at every Table 3 column with OLIA, wVegas and uncoupled "
    "Cubic, at Table 2's 100, 200 and 800 ms with OLIA and wVegas, and at Table 1's 20 Mbit/s; OLIA's and wVegas's "
    "Table 2 cells at 500 ms stay untested")
MCUBIC_IMPLEMENTATION = Citation(
    "MCubic paper, section 4.1",
    "본 연구에서는 리눅스 커널 3.14.17[1]에서 지원되는 MPTCP에 MCubic을 구현하였다. 기본적으로 MCubic는 Cubic과 "
    "유사하며, 본 연구에서 제안된 알고리즘은 Cubic 증가 함수에서의 K 변수에 적용되었다.",
    "the authors changed the K of Linux 3.14's Cubic growth function; their code is not published, so how "
    "eq. 10 was evaluated below the origin is not known (see the eq.-10 hypothesis)")
MCUBIC_SLOW_START = Citation(
    "MCubic paper, section 4.1",
    "패킷 손실이 발생했을 때 느린 시작과 승수 감소(Multiplicative Decrease) 방식은 TCP Cubic과 동일하다.",
    "slow start and the multiplicative decrease are TCP Cubic's (Linux Cubic's slow start includes HyStart, "
    "on by default); ctl's mcubic has HyStart since issue 22")
MCUBIC_NO_FRIENDLINESS = Citation(
    "MCubic paper, section 4.1",
    "따라서 다중 경로 TCP에서 Cubic TCP의 친화 함수(Friendliness Function)은 불필요하다.",
    "MCubic leaves out Cubic's TCP-friendly region; so does ctl's mcubic")
MCUBIC_START_STOP = Citation(
    "MCubic paper, section 4.2.2",
    "분리된 병목 시나리오와 동일하게 단일 경로 TCP 플로우와 MPTCP 플로우는 동시에 시작되고 종료된다.",
    "flows start and stop together; the run length is not stated (nor in 4.2.1): see the run-length hypothesis")
MCUBIC_DUMMYNET = Citation(
    "MCubic paper, section 4.2.1",
    "링크의 용량을 수월하게 제어하기 위해서 각 경로에 dummysnet bridge를 사용하여 링크의 용량을 원하는 대로 설정하였다.",
    "the bridges are dummynet; the queue size is not stated (dummynet's default is 50 slots, which ctl uses): "
    "see the queue hypothesis")
MCUBIC_T1_SETUP = Citation(
    "MCubic paper, section 4.2.1",
    "A1-B1은 100Mbps, 그리고 두 번째 링크 A2-B2는 다양한 조건에서 측정하기 위해 10, 20, 30 그리고 50Mbps 용량으로 변화를 "
    "주었다.",
    "Table 1's set-up is given by its capacities only (the text names 30 Mbit/s where Table 1's column says 40): "
    "no delay of the paths is stated; ctl's distinct-bottleneck adds none (the rack's own RTT)")
MCUBIC_T1_LENGTH = Citation(
    "MCubic paper, section 4.2.1",
    "단일 경로 TCP와 MPTCP의 플로우의 동일하게 시작하고 종료하였으며, 시간 동안 각 링크의 처리율(Mb/s)을 측정하였다.",
    "the flows start and stop together; the measuring time is missing from the sentence (\"... 시간 동안\": "
    "\"for ... time\"), so Table 1's run length is not known")
MCUBIC_T1_JAIN = Citation(
    "MCubic paper, section 4.2.1, eq. 12",
    "식 (12)에서 T_i 은 i_{th} 속의 처리율이고, n개의 개체가 경쟁을 한다.",
    "T_i is the throughput of the i-th competing entity; which entities enter the index (the three flows, as "
    "ctl computes it, or per-link shares, or subflows) is not spelled out beyond \"사용자 평균 처리율에 대한 "
    "공정성\" (fairness of the users' mean throughputs)")
MCUBIC_T1_EQ12 = Citation(
    "MCubic paper, section 4.2.1, eq. 12",
    r"$$Fairness(throughput) = \frac{\left\{ \sum_{i=1}^n T_i \right\}^2}{n * \left\{ \sum_{i=1}^n T_i^2 \right\}} "
    r"\quad (12)$$",
    "Jain's index over n throughputs T_i; the equation does not say what the n entities are")
MCUBIC_T1_USERS = Citation(
    "MCubic paper, section 4.2.1",
    "이 시나리오에서는 TCP 플로우와 MPTCP 접속이 병목 링크를 공유하기 위해서는 공정성이 필요하다. 사용자 평균 처리율에 대한 "
    "공정성을 계산하기 위해서 식 (12)와 같이 Jain's Fairness Index[13]가 사용되었다.",
    "the text names the TCP flows and the MPTCP connection (접속) and the users' mean throughput, which fits ctl's "
    "reading (the connection is one entity); it does not say whether the index was taken over both bottlenecks "
    "at once or per bottleneck (a subflow and a TCP flow), which the hypothesis mcubic-t1-jain-entities tests")
CUBIC_314_VS_618 = Citation(
    "nodes/congestion/bpf/mcubic.bpf.c, header (ctl's reading of Linux 3.14.40's and 6.18's tcp_cubic.c)",
    "(3.14's HyStart differs: ms clock, ack delta 2 ms, no ack_delay, delay threshold clamp(delay_min / 16, 4, 16) "
    "ms, the round reset in cong_avoid.)",
    "Linux 3.14's Cubic (the paper's) and 6.18's (the rack's) differ at least in HyStart's detection and in how "
    "cnt is applied (3.14 divides it by a delayed-ACK ratio and steps once per ACK; mcubic.bpf.c's mcubic_wrap "
    "reproduces that for MCubic; cubic314.bpf.c, for the competing Cubic flow)")
TCP_CUBIC_U32 = Citation(
    "Linux net/ipv4/tcp_cubic.c, bictcp_update() (3.x, the paper's base)",
    "u32 delta, t, bic_target, max_cnt; ... if (t < ca->bic_K) bic_target = ca->bic_origin_point - delta;",
    "the target below the origin is computed in unsigned 32-bit arithmetic without a guard: with a K larger "
    "than Cubic's own (K_mptcp), delta exceeds the origin and the target wraps to a huge value")
BT_KERNEL = Citation(
    "MPTCP + BitTorrent paper, section II",
    "가상 머신 상의 운영체제는 Ubuntu Desktop 24.04 LTS(리눅스 커널 6.8.0-31)을 설치하였다.",
    "the paper ran upstream Linux MPTCP (v1, kernel 6.8) under Mininet, as ctl does (upstream MPTCP, its "
    "in-kernel path manager); the paper does not state its path-manager settings (endpoints, limits)")
BBR_KERNEL = Citation(
    "BBRv3 paper, section 2 (본론)",
    "22.04 버전의 Ubuntu, 6.4.0+v3+7542cc7c41c0+GCE 버전의 BBRv3 커널 버전 및 Mininet(ver.2.3.0)이 적용된다.",
    "the paper ran Google's BBRv3 kernel; upstream Linux's `bbr` (net/ipv4/tcp_bbr.c) is BBRv1, so on a stock "
    "kernel the `bbr` rows here are BBRv1, not the algorithm the paper is about")
BBR_LOSS_THRESH = Citation(
    "draft-cardwell-iccrg-bbr-congestion-control-02, section 2.8",
    "The maximum tolerated per-round-trip packet loss rate when probing for bandwidth (the default is 2%).",
    "BBRv2 (this revision) and BBRv3 (BBRLossThresh of draft-ietf-ccwg-bbr-06, which ctl's bbr3 follows) bound "
    "their in-flight data when a round's loss rate exceeds 2 %; BBRv1 has no such loss response, so v1 and v3 can "
    "differ exactly where the paper adds random loss")
BBR_SHAPING = Citation(
    "BBRv3 paper, section 2 (본론)",
    "송신측 스위치의 오른쪽 인터페이스에 TBF(Token Bucket Filter)를 이용하여 1Gbps의 병목 지점을 생성하고 network "
    "buffer는 1BDP(Bandwidth Delay Product)로 설정한다. 추가적으로 NetEm을 이용하여 RTT, 패킷 손실률의 변화를 설정한다.",
    "the paper shaped with tbf and netem in the kernel; the virtual rack shapes with the dnpipe forwarder in user "
    "space, whose forwarded rate each run records (bridge_forward_mbps)")

CITATIONS: dict[str, tuple[Citation, ...]] = {
    "mcubic": (MCUBIC_TCP_IS_CUBIC_421, MCUBIC_TCP_IS_CUBIC_422, MCUBIC_IMPLEMENTATION, MCUBIC_SLOW_START,
               MCUBIC_NO_FRIENDLINESS, MCUBIC_START_STOP, MCUBIC_DUMMYNET),
    "bbrv3": (BBR_KERNEL, BBR_LOSS_THRESH, BBR_SHAPING),
    "mptcp-bt": (BT_KERNEL,),
}
