"""The integration tests' two lanes (issue 28): the README's suite run puts them on two pytest-xdist
workers at once, each lane on its own worker with its own session virtual rack (tests/conftest.py).

Lane A, "timed", is the default: everything that measures throughput or timing against the rack,
registers BPF congestion controls, sets or reads kernel-wide state (registered congestion
controls, tcp_available_congestion_control, hostctl's holders file in /run/ctl-cc, sysctls of the
initial namespace, BPF programs), or builds a third rack (`tc_rack`). A module that is not named
below is in lane A: a new module is safe until someone has read it and moved it.

Lane B, "light": the modules in LIGHT, each read for it. None names a BPF algorithm, bbr or `--cc`
(their runs use cubic or reno, built into every kernel: ctl loads nothing, and its restore check
compares only the holds of ctl's own BPF algorithms), none reads or writes kernel-wide state, and
none asserts a throughput or a delay that another rack's traffic on the other core could move:
their rates are shaped far below what this machine forwards, their clocks are 1 s samples with
seconds of slack. tests/unit/test_lanes.py checks the words mechanically.

Scheduling: each lane is one work unit (its tests on one rack, one module after the other: FIRST,
then file order); the two lanes are handed out first, one to each worker, and the unit-test
modules after them (see rack_scheduling).
"""
from __future__ import annotations

INTEGRATION = "tests/integration/"
LANE_A = "tests/integration (lane A: timed)"
LANE_B = "tests/integration (lane B: light)"
LANES = (LANE_A, LANE_B)

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
    "test_while_it_runs.py": "live progress of a 6 s run (path2 shaped to 20 Mbit/s: its rate stays below 21), "
                             "an interrupted BitTorrent step, campaign status after kill -9, link reset",
}


# Within a lane these modules run first, in this order (the others after them, in file order), so
# that lane A's results that depend on this machine's timing -- a per-ACK trace against the clock,
# the forwarders' delay and rate, path totals within the issue's ranges -- are measured while lane B
# runs its two field tests, which mostly wait on the wall clock (a trace position, a 65 s run, the
# minute without uplink). Lane A starts with the short probe that builds its rack, while lane B
# builds its own (one at a time: support/rack.py).
FIRST = ("test_inventory_probe.py", "test_bbr3.py", "test_dnpipe_forwarder.py", "test_links.py",
         "test_distinct_bottleneck.py", "test_field_mm.py", "test_field_mode.py")


def module_of(nodeid: str) -> str:
    return nodeid.split("::", 1)[0]


def lane_of(nodeid: str) -> str | None:
    """The lane of an integration test (LANE_A or LANE_B), None for any other test."""
    path = module_of(nodeid)
    if not path.startswith(INTEGRATION):
        return None
    return LANE_B if path[len(INTEGRATION):] in LIGHT else LANE_A


def work_unit(nodeid: str) -> str:
    """The xdist work unit of a test: its lane for an integration test (one rack, file order),
    its module for any other (module-scoped fixtures are built once)."""
    return lane_of(nodeid) or module_of(nodeid)


def lane_order(nodeids: list[str]) -> list[str]:
    """A lane's tests in the order they run: the FIRST modules, then the others; each module's
    tests together and in file order (a stable sort by module)."""
    def rank(nodeid: str) -> int:
        name = module_of(nodeid).rsplit("/", 1)[-1]
        return FIRST.index(name) if name in FIRST else len(FIRST)
    return sorted(nodeids, key=rank)


def rack_scheduling(config, log):
    """The scheduler of the suite run (pytest-xdist's LoadScopeScheduling, whose initial
    distribution pops the work queue in order -- by default reordered by number of tests --
    one unit per worker, then tops up a worker whenever it has two tests or fewer pending).
    Here every assignment first moves the right unit to the front of the queue: a worker
    that has no lane yet gets the next lane (A, then B), so the two lanes start at once on two
    workers, before any unit-test module; a worker that had a lane gets unit-test modules while
    there are any. (A lane is given to a worker that already ran one only when nothing else is
    left, e.g. after a worker crashed: late, never lost.)"""
    from xdist.scheduler import LoadScopeScheduling

    class RackScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

        def _assign_work_unit(self, node) -> None:
            had_lane = any(scope in LANES for scope in self.assigned_work.get(node, {}))
            queued = [lane for lane in LANES if lane in self.workqueue]
            if queued and not had_lane:
                self.workqueue.move_to_end(queued[0], last=False)
            elif had_lane:
                other = next((scope for scope in self.workqueue if scope not in LANES), None)
                if other is not None:
                    self.workqueue.move_to_end(other, last=False)
            scope = next(iter(self.workqueue))
            if scope in LANES:
                unit = self.workqueue[scope]
                self.workqueue[scope] = {nodeid: unit[nodeid] for nodeid in lane_order(list(unit))}
            super()._assign_work_unit(node)

    return RackScheduling(config, log)
