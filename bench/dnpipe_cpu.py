"""CPU accounting for bench/dnpipe_bench.py: whose CPU a forwarded packet costs.

On veths a sender's kernel delivers a frame to the peer in the sender's own context
(veth_xmit -> netif_rx -> the softirq run when the send call re-enables bottom halves).
So the CPU time of the process that sends into a veth includes the receiver's IP/TCP
work: dnpipe's send calls run the server's TCP receive and ACK generation and the
client's ACK processing and next transmissions. On a real rack that work runs on the
endpoints' own machines. Three figures keep this visible:

- the dnpipe process's CPU (utime + stime, /proc/PID/stat): what `top` shows;
- the path's CPU: dnpipe + both iperf3 processes + the kernel's softirq and NAPI threads,
  the same sum for the kernel bridge (tbf) path, so the two can be compared;
- with `--profile`, a sampled split of dnpipe's own time (perf, cpu-clock): its user
  space, its send and wait system calls, and the softirq work that runs inside them.

Softirq work that runs while a CPU is idle, or inside an unrelated process, is in none of
the process figures (both paths lose some; the kernel bridge more, see README-dnpipe).
"""
from __future__ import annotations

import collections
import os
import shutil
import subprocess
import tempfile
import time

CLK_TCK = os.sysconf("SC_CLK_TCK")


def run_rusage(argv: list[str], timeout: float) -> tuple[str, str, float]:
    """Run argv; its stdout, stderr and CPU seconds (rusage at exit: `ip netns exec`
    execs the program in place, so this is the program's own)."""
    with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
        p = subprocess.Popen(argv, stdout=out, stderr=err, text=True)
        deadline = time.monotonic() + timeout
        while True:
            pid, status, ru = os.wait4(p.pid, os.WNOHANG)
            if pid:
                p.returncode = os.waitstatus_to_exitcode(status)
                break
            if time.monotonic() > deadline:
                p.kill()
                _, status, ru = os.wait4(p.pid, 0)
                p.returncode = os.waitstatus_to_exitcode(status)
                break
            time.sleep(0.05)
        out.seek(0)
        err.seek(0)
        return out.read(), err.read(), ru.ru_utime + ru.ru_stime


def proc_cpu_s(pid: int | None) -> float:
    """utime + stime of a process in seconds; 0 when it is gone."""
    if pid is None:
        return 0.0
    try:
        f = open(f"/proc/{pid}/stat").read().rsplit(")", 1)[1].split()
    except OSError:
        return 0.0
    return (int(f[11]) + int(f[12])) / CLK_TCK


def kernel_threads_cpu_s(napi_prefix: str) -> float:
    """CPU of the softirq threads (ksoftirqd/N) and of the threaded-NAPI pollers of our
    own interfaces (napi/<prefix>...): network work the kernel moved out of processes."""
    total = 0.0
    for p in os.listdir("/proc"):
        if not p.isdigit():
            continue
        try:
            s = open(f"/proc/{p}/stat").read()
        except OSError:
            continue
        name = s[s.find("(") + 1:s.rfind(")")]
        if name.startswith("ksoftirqd/") or name.startswith("napi/" + napi_prefix):
            f = s.rsplit(")", 1)[1].split()
            total += (int(f[11]) + int(f[12])) / CLK_TCK
    return total


def machine_busy_s() -> float:
    """CPU seconds the whole machine spent not idle (all CPUs, /proc/stat)."""
    cpu = [int(x) for x in open("/proc/stat").readline().split()[1:]]
    idle = cpu[3] + cpu[4]
    return (sum(cpu[:8]) - idle) / CLK_TCK


# ---- sampled profile of the forwarder -------------------------------------------------

SOFTIRQ = ("handle_softirqs", "__do_softirq", "do_softirq", "net_rx_action", "process_backlog", "__napi_poll")
ENDPOINT = ("tcp_", "ip_", "inet_", "skb_segment", "sock_def_readable", "__wake_up", "udp_")
VETH = ("veth_", "netif_", "__dev_queue_xmit", "dev_hard_start", "__dev_forward")
WAIT = ("ppoll", "do_sys_poll", "schedule", "finish_task_switch", "hrtimer", "poll_schedule")
CATEGORIES = ("own: user space", "own: send calls (skb, copy, veth xmit)", "own: wait (ppoll, wake-up)",
              "own: other system calls", "inline softirq: frames into its rings",
              "inline softirq: endpoints' IP/TCP", "inline softirq: veth delivery")


def classify(frames: list[str]) -> str:
    """One sample's call chain (leaf first) -> one of CATEGORIES."""
    if any(k in f for f in frames for k in SOFTIRQ):
        for f in frames:  # the innermost frame that says whose work it is
            if "tpacket_rcv" in f or "packet_rcv" in f:
                return CATEGORIES[4]
            if any(k in f for k in ENDPOINT):
                return CATEGORIES[5]
            if any(k in f for k in VETH):
                return CATEGORIES[6]
        return CATEGORIES[6]
    chain = " ".join(frames)
    if "sendmmsg" in chain or "sendmsg" in chain:
        return CATEGORIES[1]
    if any(k in chain for k in WAIT):
        return CATEGORIES[2]
    if any(k in chain for k in ("entry_SYSCALL", "do_syscall", "asm_exc", "asm_sysvec")):
        return CATEGORIES[3]
    return CATEGORIES[0]


def split_of_script(text: str) -> dict[str, float]:
    """`perf script -F ip,sym` output -> share of samples per category."""
    counts: collections.Counter[str] = collections.Counter()
    for block in text.split("\n\n"):
        frames = [(line.split(None, 1) + ["?"])[1] for line in block.strip().splitlines()]
        if frames:
            counts[classify(frames)] += 1
    total = sum(counts.values())
    return {c: counts[c] / total for c in CATEGORIES} if total else {}


class Profiler:
    """`perf record` of one process for a while (cpu-clock: this VM has no hardware
    counters), classified with `split_of_script`. perf missing or refused: no split."""

    def __init__(self, pid: int, seconds: float) -> None:
        self.tmp = tempfile.NamedTemporaryFile(prefix="dnpb-perf-", suffix=".data", delete=False)
        self.tmp.close()
        self.p = subprocess.Popen(["perf", "record", "-q", "-e", "cpu-clock", "-F", "999", "-g", "-p", str(pid),
                                   "-o", self.tmp.name, "--", "sleep", f"{seconds:.1f}"],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)

    @staticmethod
    def available() -> bool:
        if shutil.which("perf") is None:
            return False
        r = subprocess.run(["perf", "stat", "-e", "task-clock", "true"], capture_output=True)
        return r.returncode == 0

    def split(self) -> dict[str, float]:
        try:
            self.p.wait(60)
            out = subprocess.run(["perf", "script", "-i", self.tmp.name, "-F", "ip,sym"], capture_output=True,
                                 text=True, timeout=120).stdout
            return split_of_script(out)
        except (subprocess.TimeoutExpired, OSError):
            return {}
        finally:
            os.unlink(self.tmp.name)


def describe_split(split: dict[str, float]) -> str:
    """One line: own work, then what ran inside its calls."""
    if not split:
        return "profile: none"
    own = sum(v for k, v in split.items() if k.startswith("own"))
    parts = [f"{100 * v:.0f}% {k.split(': ', 1)[1]}" for k, v in split.items() if v >= 0.005]
    return f"profile: own {100 * own:.0f}% / inline softirq {100 * (1 - own):.0f}% ({', '.join(parts)})"


def timed_wake_cost_us(period_us: float = 100.0, n: int = 4000) -> tuple[float, float]:
    """CPU microseconds a thread pays per timed sleep of `period_us` on this machine (timer
    slack 1 ns, as dnpipe's data thread sets), and per plain system call for comparison.
    On a VM each sleep re-programs the hardware timer, which the hypervisor traps; that,
    not the system call, is what a forwarder pays per wake-up."""
    import ctypes

    libc = ctypes.CDLL(None, use_errno=True)
    pr_get, pr_set = 30, 29  # PR_GET_TIMERSLACK, PR_SET_TIMERSLACK
    old = libc.prctl(pr_get, 0, 0, 0, 0)
    libc.prctl(pr_set, ctypes.c_ulong(1), 0, 0, 0)
    try:
        c0 = time.thread_time_ns()
        for _ in range(n):
            time.sleep(period_us / 1e6)
        c1 = time.thread_time_ns()
        for _ in range(n):
            os.getppid()
        c2 = time.thread_time_ns()
    finally:
        libc.prctl(pr_set, ctypes.c_ulong(old if old > 0 else 50000), 0, 0, 0)
    return (c1 - c0) / n / 1e3, (c2 - c1) / n / 1e3
