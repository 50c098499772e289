"""The integration tests' lanes (issue 28): the README's suite run puts them on pytest-xdist workers
at once, each worker with its own session virtual rack (tests/conftest.py).

Lane A, "timed", is the default: everything that measures throughput or timing against the rack,
loads BPF congestion controls of its own (a trace build, `hostctl load` under the test's own
holder id), sets or reads kernel-wide state (tcp_available_congestion_control, sysctls of the
initial namespace, BPF programs and maps), asks for the kernel's bbr (a module the kernel loads on
first use and never unloads), or builds a third rack (`tc_rack`). A module that is not named
below is in lane A: a new module is safe until someone has read it and moved it. Lane A is one
worker's, start to end: never two of its tests at once.

Lane B, "light": the modules in LIGHT, each read for it. None asserts a throughput or a delay that
another rack's traffic could move: their rates are shaped far below what this machine forwards,
their clocks are 1 s samples with seconds of slack. Their runs ask for cubic or reno (built into
every kernel: ctl loads nothing) or for a congestion control that does not exist (refused before
anything changes); none reads or writes kernel-wide state -- except the modules in BPF_RUNS,
which run ctl's BPF congestion controls through `ctl run` (or ctl's own congestion stage) and
nothing else: each run holds what it loads under its own holder id in hostctl's holders file
(/run/ctl-cc/holders.json), shares a program another rack on this kernel registered from the
same build instead of registering it twice, and its test judges the kernel's lists by its own
holds only (tests/support/kernel_cc.py: what another rack holds meanwhile is that rack's). Lane A's
checks are the same, so neither lane fails for the other's registrations (issue 28, 2026-11-27).
tests/unit/test_lanes.py checks the words mechanically. Lane B runs as two halves, B1 and B2
(SECOND_HALF), each one work unit: on two more workers at once when there are three, one after
the other on one worker when there are two.

Order: lane A runs the modules in LAST at its end (the others in file order before them): what
they measure depends on this machine's timing -- path totals within the issue's ranges and the
parallel-streams model, link measure's RTT and rate, the forwarder's own delay and rate, bbr3's
per-ACK trace against the clock. Lane B runs the modules in FIRST at its start: test_cc_runs.py's
BPF runs (20 s each on the shared bottleneck) are lane B's heaviest traffic, and they end while
lane A runs its untimed modules. What shares the machine with LAST is lane B's light rest and the
unit tests, at LIGHT_NICE (below). The unit-test modules are handed out after the lanes, to the
workers the lanes free (see rack_scheduling).

Priority: lane A holds what timing can move (until 2026-11-27 it was also the suite's wall time,
minutes after the others; with test_cc_runs.py in lane B the lanes end about together), so in the
suite run a worker runs lane A's tests at nice 0 and every other test (lane B, unit tests) at nice
LIGHT_NICE, and what a test starts inherits it (a lane-B rack's sshd, forwarders, InfluxDB): when
both want the CPU, lane A gets it (`nice_of`; CTL_TEST_LIGHT_NICE=0 puts every worker at one
priority). Measured on 2026-11-26 (18d24bb): clean-clone runs 10:29-10:42 at nice 10 against
11:05-11:41 at one priority. It was taken back (64468e4) for the one real-time property lane B then
had, the live view's once-a-second frames on a terminal (a 6 s run drew no frame for 6 s at nice
10); that test is lane A's now (test_live_view.py), and nothing in LIGHT asserts a cadence. Checked
on 2026-11-27 harsher than a suite run: test_field_mm and test_abort_and_safety's signal and kill -9
tests at nice 10 beside two CPU-bound processes at nice 0 (both cores busy) passed.
"""
from __future__ import annotations

INTEGRATION = "tests/integration/"
LANE_A = "tests/integration (lane A: timed)"
LANE_B1 = "tests/integration (lane B1: light)"
LANE_B2 = "tests/integration (lane B2: light)"
LANES = (LANE_A, LANE_B1, LANE_B2)
LIGHT_LANES = (LANE_B1, LANE_B2)
LIGHT_NICE = 10       # the suite run's nice for every test but lane A's (see the module's doc)

# module -> why it may share the machine with lane A (the one place a lane is declared)
LIGHT: dict[str, str] = {
    "test_field_mm.py": "field mode on m1's own ModemManager (its own mount namespace and bus): 1 s radio "
                        "samples on the emulator's wall-clock trace, with 2 s margins around every change",
    "test_field_mode.py": "a 1 Mbit/s iperf3 download through m2's uplink (root-namespace server on a pid-derived "
                          "port), the 60 s cut, a kill -9: counts of 1 s samples, never a rate bound",
    "test_shared_lab.py": "two-rack campaign (its own `rack_b`, PostgreSQL per worker), leases and reservations; "
                          "3 s distinct-bottleneck runs with cubic/reno, Jain's index only reported",
    "test_snmp_poller.py": "its own namespace `snt<hex>` and random 10.250/10.251 subnets; UDP paced at 800-1500 "
                           "packets/s, its rates compared with what the sender itself counted and timed",
    "test_influx_outage.py": "this rack's own InfluxDB stopped and frozen; point counts and values, no timing",
    "test_campaign_crash.py": "kill -9 of campaign daemons, recovery, report in headless Chromium; 3 s runs at "
                              "10-20 Mbit/s with cubic/reno",
    "test_campaign_control.py": "health check, SIGTERM and cancel of a daemon; `nosuchcc` is refused before "
                                "anything changes",
    "test_lab_trust_locks.py": "leases, reservations, lock directories of this rack and of its test controllers",
    "test_lab_trust_files.py": "rows of a PostgreSQL lab database as input; no rack",
    "test_grafana_dashboard.py": "one 10 s run, then the dashboard's queries against this rack's InfluxDB",
    "test_install.py": "a wheel built out of tree and installed into a fresh virtual environment; no rack",
    "test_login_shell.py": "an asyncssh server on loopback; no rack",
    "test_abort_and_safety.py": "bad input, Ctrl-C, SIGTERM, a lost SSH connection and kill -9 in a run's overlaps, "
                                "one run per rack: this rack's own bridges, endpoints, records and lock dir "
                                "compared before and after; `--cc nosuchcc` is refused before anything changes",
    "test_while_it_runs.py": "an interrupted BitTorrent step, campaign status after kill -9, link reset (the "
                             "live view's once-a-second cadence is test_live_view.py, lane A)",
    "test_cc_runs.py": "ctl's BPF congestion controls through `ctl run` only (BPF_RUNS): records, subflows seen "
                       "running them, coupling maps emptied, nothing left registered; no rate, no clock",
    "test_leftover.py": "a connection on this rack's own a1-b1 path drained by a reader that sleeps 0.1 s per 2 KB "
                        "(~20 s for 400 KB) against the run's 60 s wait; one 5 s cubic run, its record and summary",
    "test_foreign_leftover.py": "a connection on this rack's own a1-b1 path that a reader sleeping 0.1 s per 400 B "
                                "keeps going past the run's 60 s wait (load only slows it); one 5 s cubic run, "
                                "its foreign traffic judged either way (valid or not) by the test",
}
# The lane-B modules that may run ctl's BPF congestion controls, through `ctl run` and ctl's congestion
# stage only (see the module's doc): the words of holds (hostctl, its holders) are theirs to use; a trace
# build, a `hostctl load` of the test's own, bpftool and the kernel's bbr are not.
BPF_RUNS: dict[str, str] = {
    "test_cc_runs.py": "each run's hold is released by the run (or the next start's recovery), and the fixture "
                       "takes back any hold of this rack's runs; the kernel's lists are judged by these holds",
}
# Lane B's second half (the rest is B1): measured on 2026-11-27 (8882f51, three lanes at once) B1 425 s,
# B2 370 s; test_cc_runs.py (about 230 s in lane A) joined B2, the lighter one. At d8104e8 (/work/cc6,
# 12:51) B1 613 s and B2 820 s (their tests' sums 577 s and 789 s): test_leftover.py and
# test_foreign_leftover.py (95 s, from lane A) went to B1, and test_snmp_poller.py (66 s) from B2 to B1:
# by the same sums B1 738 s, B2 723 s.
SECOND_HALF = frozenset({"test_while_it_runs.py", "test_shared_lab.py", "test_campaign_crash.py",
                         "test_lab_trust_locks.py", "test_campaign_control.py", "test_cc_runs.py"})
# A lane's start (lane B2's: see the module's doc), and lane A's end, in this order.
FIRST = ("test_cc_runs.py",)
LAST = ("test_scenarios_more.py", "test_distinct_bottleneck.py", "test_links.py", "test_dnpipe_forwarder.py",
        "test_bbr3.py")


def module_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def lane_of(nodeid: str) -> str | None:
    """The lane of an integration test (LANE_A, LANE_B1 or LANE_B2), None for any other test."""
    path = module_of(nodeid)
    if not path.startswith(INTEGRATION):
        return None
    name = path[len(INTEGRATION):]
    if name not in LIGHT:
        return LANE_A
    return LANE_B2 if name in SECOND_HALF else LANE_B1


def nice_of(nodeid: str, light_nice: int = LIGHT_NICE) -> int:
    """The nice value a test runs at in the suite run: 0 for lane A, `light_nice` for any other."""
    return 0 if lane_of(nodeid) == LANE_A else light_nice


def work_unit(nodeid: str) -> str:
    """The xdist work unit of a test: its lane for an integration test (one rack, in order),
    its module for any other (module-scoped fixtures are built once)."""
    return lane_of(nodeid) or module_of(nodeid)


def lane_order(nodeids: list[str]) -> list[str]:
    """A lane's tests in the order they run: the modules in file order, those in FIRST at the start
    and those in LAST at the end, each in its tuple's order; each module's tests together and in file
    order (a stable sort)."""
    def rank(nodeid: str) -> int:
        name = module_of(nodeid).rsplit("/", 1)[-1]
        if name in FIRST:
            return FIRST.index(name) - len(FIRST)
        return 1 + LAST.index(name) if name in LAST else 0
    return sorted(nodeids, key=rank)


def rack_scheduling(config, log):
    """The scheduler of the suite run. pytest-xdist's LoadScopeScheduling pops its work queue
    in order (by default reordered by number of tests), one unit per worker at first, then tops
    up a worker whenever it has two tests or fewer pending. Here every assignment first moves
    the right unit to the front of the queue:

    - a worker that has no lane yet gets the next lane (A, B1, B2): the lanes start at once, on
      as many workers, before any unit-test module;
    - a worker that ran only light lanes gets the next light lane (two workers: B1, then B2, on
      the second), then unit-test modules;
    - a worker that ran lane A gets unit-test modules.

    A lane goes to a worker against these rules only when nothing else is left (a worker
    crashed, its lane queued again): late, never lost, never two lanes at once on one worker."""
    from xdist.scheduler import LoadScopeScheduling

    class RackScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

        def _assign_work_unit(self, node) -> None:
            had = [scope for scope in self.assigned_work.get(node, {}) if scope in LANES]
            if not had:
                wanted = LANES
            elif all(scope in LIGHT_LANES for scope in had):
                wanted = LIGHT_LANES
            else:
                wanted = ()
            pick = next((lane for lane in wanted if lane in self.workqueue), None)
            if pick is None:
                pick = next((scope for scope in self.workqueue if scope not in LANES), None)
            if pick is not None:
                self.workqueue.move_to_end(pick, last=False)
            scope = next(iter(self.workqueue))
            if scope in LANES:
                unit = self.workqueue[scope]
                self.workqueue[scope] = {nodeid: unit[nodeid] for nodeid in lane_order(list(unit))}
            super()._assign_work_unit(node)

    return RackScheduling(config, log)


def timeline(ends: list[tuple[str, float, str]]) -> list[str]:
    """The suite run's critical path, one line per worker: what it ran, in order, each stretch from
    the end of the test before it to the end of its last test (seconds since the run started), from
    `ends`: (worker, seconds, nodeid) as each test finished. The worker that ends last is the wall
    time; its line says which lane that was."""
    stretches: dict[str, list[list]] = {}
    for worker, t, nodeid in sorted(ends, key=lambda e: e[1]):
        kind = lane_of(nodeid) or "unit tests"
        kind = kind.split("(", 1)[1].rstrip(")") if "(" in kind else kind
        mine = stretches.setdefault(worker, [])
        if mine and mine[-1][0] == kind:
            mine[-1][2], mine[-1][3] = t, mine[-1][3] + 1
        else:
            mine.append([kind, mine[-1][2] if mine else 0.0, t, 1])
    last = max(stretches, key=lambda w: stretches[w][-1][2]) if stretches else None
    lines = []
    for worker in sorted(stretches):
        parts = ", ".join(f"{kind} {a:.0f}-{b:.0f} s ({n} test{'s' if n != 1 else ''})"
                          for kind, a, b, n in stretches[worker])
        lines.append(f"{worker}: {parts}; done at {stretches[worker][-1][2]:.0f} s"
                     + ("  <- the wall time" if worker == last else ""))
    return lines
