"""The lanes of integration tests (tests/support/lanes.py): what may go into lane B, which
shares the machine with lane A, checked on the modules' text; and the scheduler that starts the
lanes first, one on each worker (the installed pytest-xdist's LoadScopeScheduling, driven here
with stand-ins for its worker processes: they record what they are sent)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from nodes.congestion.catalog import ALGORITHMS
from tests.support.lanes import (BPF_RUNS, FIRST, INTEGRATION, LANE_A, LANE_B1, LANE_B2, LAST, LIGHT, LIGHT_NICE,
                                 SECOND_HALF, lane_of, lane_order, nice_of, rack_scheduling, timeline, work_unit)

PROJECT = Path(__file__).resolve().parents[2]
MODULES = sorted(p.name for p in (PROJECT / INTEGRATION).glob("test_*.py"))

# Congestion controls a lane-B module may name: built into every kernel (always in
# tcp_available_congestion_control: nothing is loaded), or the name of none (refused before
# anything changes). bbr is a module the kernel loads on first use: kernel-wide, so lane A.
LIGHT_CC = {"cubic", "reno", "nosuchcc"}
# Words of kernel-wide state and of the fixtures and helpers that change or compare it.
KERNEL_WIDE = ("hostctl", "holders", "_congestion_control", "/proc/sys", "sysctl", "bpftool", "struct_ops",
               "nodes.congestion", "tc_rack", "release_cc_holds", "modprobe")
# The words of holds, which a module in BPF_RUNS may use: its runs' holds (hostctl's holders file), ctl's
# catalog of algorithms, and the per-holder check of the kernel's lists (tests/support/kernel_cc.py).
HOLD_WORDS = ("hostctl", "holders", "nodes.congestion")
# A word of the list above in a lane-B module that is not a use, and why.
NOT_A_USE = {("test_abort_and_safety.py", "sysctl"): "in the changing commands a refused run must not have issued",
             ("test_cc_runs.py", "struct_ops"): "in its doc: why its fixture takes back its runs' holds"}
BPF_NAMES = sorted({n for n in ALGORITHMS} | {a.trace_name for a in ALGORITHMS.values()} | {"bbr"})
TRACE_NAMES = sorted(a.trace_name for a in ALGORITHMS.values())
# What loads a program outside ctl's runs: a trace build (its fixture, its build flag, test_bpf_cc's
# Registered), hostctl called by the test itself, its `load` verb. None is for a module in BPF_RUNS.
OWN_LOADS = ("bpf_trace_dir", "trace=True", "Registered(", "_hostctl(", '"load"')


def source(name: str) -> str:
    return (PROJECT / INTEGRATION / name).read_text()


def test_every_lane_b_module_exists_and_each_half_has_some():
    assert set(LIGHT) <= set(MODULES), sorted(set(LIGHT) - set(MODULES))
    assert SECOND_HALF < set(LIGHT) and SECOND_HALF
    assert set(LAST) <= set(MODULES) and not set(LAST) & set(LIGHT)
    assert set(BPF_RUNS) <= set(LIGHT) and set(FIRST) <= set(LIGHT) and not set(FIRST) & set(LAST)


def test_a_module_not_named_is_lane_a_and_unit_tests_have_no_lane():
    assert lane_of("tests/integration/test_bpf_cc.py::test_nothing_stays_registered") == LANE_A
    assert lane_of("tests/integration/test_a_module_written_tomorrow.py::test_x[1]") == LANE_A
    assert lane_of("tests/integration/test_field_mode.py::test_field_run") == LANE_B1
    assert lane_of("tests/integration/test_shared_lab.py::test_x") == LANE_B2
    assert lane_of("tests/unit/controller/test_units.py::test_rate") is None
    assert work_unit("tests/unit/controller/test_units.py::TestX::test_rate") == "tests/unit/controller/test_units.py"
    assert work_unit("tests/integration/test_install.py::test_version") == LANE_B1


def test_lane_order_puts_last_at_the_end_and_keeps_each_module_together_in_file_order():
    ids = ["tests/integration/test_bpf_cc.py::test_a", "tests/integration/test_bbr3.py::test_2",
           "tests/integration/test_bbr3.py::test_1", "tests/integration/test_links.py::test_p",
           "tests/integration/test_cubic314.py::test_b"]
    assert lane_order(ids) == [ids[0], ids[4], ids[3], ids[1], ids[2]]


def test_lane_order_puts_first_at_the_start():
    ids = ["tests/integration/test_campaign_crash.py::test_sweep", "tests/integration/test_cc_runs.py::test_2",
           "tests/integration/test_shared_lab.py::test_x", "tests/integration/test_cc_runs.py::test_1"]
    assert lane_order(ids) == [ids[1], ids[3], ids[0], ids[2]]


def asked_for(text: str) -> set[str]:
    """The congestion controls a module's runs ask for: `--cc x` or `--tcp-cc x` on a command line, `cc: x`,
    `cc: [x, y]`, `{cc: x}` in a campaign file."""
    asked = set(re.findall(r"--(?:tcp-)?cc\W+([\w-]+)", text))
    for value in re.findall(r"\bcc:\s*(\[[^\]\n]*\]|[\w-]+)", text):
        asked |= set(re.findall(r"[\w-]+", value))
    return asked


def names(alg: str, text: str) -> bool:
    """`alg` named on its own; a file name that contains one (a shipped campaign, a source file the wheel
    carries) is not a use."""
    return re.search(rf"(?<![\w/.-]){re.escape(alg)}(?![\w.-])", text) is not None


@pytest.mark.parametrize("name", sorted(LIGHT))
def test_a_lane_b_module_touches_nothing_kernel_wide(name):
    text = source(name)
    allowed = HOLD_WORDS if name in BPF_RUNS else ()
    for word in KERNEL_WIDE:
        assert word not in text or (name, word) in NOT_A_USE or word in allowed, \
            f"{name} names {word!r}: kernel-wide, lane A"
    if name in BPF_RUNS:
        # ctl's own algorithms through its runs; never a trace build (a test's own load), never the kernel's bbr
        for alg in TRACE_NAMES:
            assert not names(alg, text), f"{name} names the trace build {alg}: lane A"
        for word in OWN_LOADS:
            assert word not in text, f"{name} loads a program itself ({word!r}): lane A"
        assert not asked_for(text) & ({"bbr"} | set(TRACE_NAMES)), f"{name} runs the kernel's bbr or a trace build"
        return
    for alg in BPF_NAMES:
        assert not names(alg, text), f"{name} names {alg}: lane A"
    assert asked_for(text) <= LIGHT_CC, f"{name} runs {sorted(asked_for(text) - LIGHT_CC)}: lane A"


def test_the_lane_a_modules_this_rule_keeps_out_are_caught():
    """The check above finds what it is for, in the modules that have it: the light rule catches every
    module that names kernel-wide state or a BPF algorithm (test_cc_runs.py too, were it not in BPF_RUNS);
    the BPF_RUNS rule still catches the modules that load trace builds or programs of their own."""
    caught, caught_as_bpf_run = set(), set()
    for name in MODULES:
        text = source(name)
        if any(w in text and (name, w) not in NOT_A_USE for w in KERNEL_WIDE) or any(
                names(a, text) for a in BPF_NAMES) or asked_for(text) - LIGHT_CC:
            caught.add(name)
        if any(w in text and (name, w) not in NOT_A_USE and w not in HOLD_WORDS for w in KERNEL_WIDE) or any(
                names(a, text) for a in TRACE_NAMES) or any(w in text for w in OWN_LOADS) or \
                asked_for(text) & ({"bbr"} | set(TRACE_NAMES)):
            caught_as_bpf_run.add(name)
    assert {"test_bpf_cc.py", "test_bbr3.py", "test_cc_runs.py", "test_links.py", "test_inventory_probe.py",
            "test_reproduce.py", "test_scenarios_more.py"} <= caught
    assert caught & set(LIGHT) == set(BPF_RUNS)
    assert {"test_bpf_cc.py", "test_bbr3.py", "test_cubic314.py", "test_bpf_churn.py"} <= caught_as_bpf_run
    assert not caught_as_bpf_run & set(LIGHT)


# ---- the scheduler ---------------------------------------------------------------------------------


class _Option:
    loadscopereorder = True     # pytest-xdist's default: units ordered by number of tests


class _Config:
    option = _Option()

    def __init__(self, workers: int):
        self.workers = workers

    def getvalue(self, name: str):
        assert name == "tx"
        return [f"{self.workers}*popen"]


class _Worker:
    """Stands for a worker process: what the scheduler sends it."""

    def __init__(self, name: str):
        self.gateway = type("Gateway", (), {"id": name})()
        self.shutting_down = False
        self.sent: list[list[int]] = []

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent.append(list(indices))

    def shutdown(self) -> None:
        self.shutting_down = True


COLLECTION = (
    # a unit-test module with more tests than any lane: pytest-xdist alone would start with it
    [f"tests/unit/test_many.py::test_{i}" for i in range(40)]
    + ["tests/integration/test_bpf_cc.py::test_a", "tests/integration/test_bpf_cc.py::test_b",
       "tests/integration/test_bpf_cc.py::test_c", "tests/integration/test_campaign_crash.py::test_sweep",
       "tests/integration/test_cubic314.py::test_list", "tests/integration/test_cubic314.py::test_bpf",
       "tests/integration/test_field_mode.py::test_field", "tests/integration/test_install.py::test_wheel",
       "tests/integration/test_install.py::test_man", "tests/integration/test_links.py::test_measure",
       "tests/integration/test_while_it_runs.py::test_live", "tests/integration/test_while_it_runs.py::test_reset"]
    + [f"tests/unit/test_small_{m}.py::test_{i}" for m in range(3) for i in range(2)]
)


def _schedule(workers: int):
    from xdist.remote import Producer
    sched = rack_scheduling(_Config(workers), Producer("test", enabled=False))
    nodes = [_Worker(f"gw{i}") for i in range(workers)]
    for n in nodes:
        sched.add_node(n)
    for n in nodes:
        sched.add_node_collection(n, COLLECTION)
    sched.schedule()
    return sched, nodes


def _units(sched, node) -> list[str]:
    return list(sched.assigned_work[node])


def _names(indices: list[int]) -> list[str]:
    return [COLLECTION[i].split("/")[-1] for i in indices]


def _finish(sched, node, count: int) -> None:
    """The worker reports its next `count` pending tests done."""
    pending = [nid for unit in sched.assigned_work[node].values() for nid, done in unit.items() if not done]
    for nid in pending[:count]:
        sched.mark_test_complete(node, COLLECTION.index(nid))


def test_three_workers_start_the_three_lanes_first_one_on_each():
    sched, (w0, w1, w2) = _schedule(3)
    assert [_units(sched, w) for w in (w0, w1, w2)] == [[LANE_A], [LANE_B1], [LANE_B2]]
    # lane A's modules in file order but test_links.py (LAST) at the end; each module together
    assert _names(w0.sent[0]) == ["test_bpf_cc.py::test_a", "test_bpf_cc.py::test_b",
                                  "test_bpf_cc.py::test_c", "test_cubic314.py::test_list",
                                  "test_cubic314.py::test_bpf", "test_links.py::test_measure"]
    assert _names(w1.sent[0]) == ["test_field_mode.py::test_field", "test_install.py::test_wheel",
                                  "test_install.py::test_man"]
    assert _names(w2.sent[0]) == ["test_campaign_crash.py::test_sweep", "test_while_it_runs.py::test_live",
                                  "test_while_it_runs.py::test_reset"]
    assert all(len(w.sent) == 1 for w in (w0, w1, w2))
    # the light workers get the unit-test modules as they free up; lane A's worker only at its end
    _finish(sched, w1, 1)
    assert _units(sched, w1) == [LANE_B1, "tests/unit/test_many.py"]
    _finish(sched, w2, 3)
    assert _units(sched, w0) == [LANE_A]
    _finish(sched, w0, 4)
    assert _units(sched, w0)[0] == LANE_A and [u[:11] for u in _units(sched, w0)[1:]] == ["tests/unit/"]


def test_two_workers_run_lane_a_on_one_and_both_light_halves_then_unit_modules_on_the_other():
    sched, (w0, w1) = _schedule(2)
    assert (_units(sched, w0), _units(sched, w1)) == ([LANE_A], [LANE_B1])
    _finish(sched, w1, 1)                              # B1 down to two tests: B2 next, before any unit module
    assert _units(sched, w1) == [LANE_B1, LANE_B2]
    _finish(sched, w1, 3)
    assert _units(sched, w1) == [LANE_B1, LANE_B2, "tests/unit/test_many.py"]
    while sched.workqueue:
        _finish(sched, w1, 1)
    assert _units(sched, w0) == [LANE_A]               # lane A still going: everything else went to w1


def test_a_lane_left_by_a_crashed_worker_goes_to_a_worker_without_one():
    sched, (w0, w1) = _schedule(2)
    sched.remove_node(w0)                             # lane A's worker died: its lane is queued again
    w2 = _Worker("gw2")
    sched.add_node(w2)
    sched.add_node_collection(w2, COLLECTION)
    sched.schedule()
    assert _units(sched, w2)[0] == LANE_A and LANE_A not in _units(sched, w1)


def test_a_fourth_worker_starts_with_unit_modules():
    sched, (w0, w1, w2, w3) = _schedule(4)
    assert [_units(sched, w) for w in (w0, w1, w2)] == [[LANE_A], [LANE_B1], [LANE_B2]]
    assert _units(sched, w3)[0] == "tests/unit/test_many.py"


# ---- the priorities ----------------------------------------------------------------------------------


def test_lane_a_runs_at_nice_0_and_every_other_test_at_the_light_nice():
    assert nice_of("tests/integration/test_bpf_cc.py::test_a") == 0
    assert nice_of("tests/integration/test_a_module_written_tomorrow.py::test_x") == 0
    assert nice_of("tests/integration/test_field_mode.py::test_field") == LIGHT_NICE == 10
    assert nice_of("tests/integration/test_shared_lab.py::test_x") == LIGHT_NICE
    assert nice_of("tests/unit/controller/test_units.py::test_rate") == LIGHT_NICE
    assert nice_of("tests/unit/controller/test_units.py::test_rate", 0) == 0      # CTL_TEST_LIGHT_NICE=0


# A worker process of the suite run, stood in for by a fresh interpreter (its priority is its own),
# started at nice 0 where it may be (this test itself runs at nice 10 in the suite run): the
# conftest's hook sets each test's nice before the test, and what the test starts inherits it.
_WORKER = """
import os, subprocess, sys, types
import tests.conftest as c
try:
    os.setpriority(os.PRIO_PROCESS, 0, 0)
except PermissionError:
    pass
config = types.SimpleNamespace(workerinput={"ctl_light_nice": int(sys.argv[1])})
seen = [str(os.getpriority(os.PRIO_PROCESS, 0))]
for nodeid in sys.argv[2:]:
    c.pytest_runtest_protocol(types.SimpleNamespace(nodeid=nodeid, config=config))
    child = subprocess.run(["nice"], capture_output=True, text=True, check=True).stdout.strip()
    seen.append(f"{os.getpriority(os.PRIO_PROCESS, 0)}/{child}")
print(" ".join(seen))
"""


def _worker(light: int, *nodeids: str) -> tuple[str, list[str]]:
    import subprocess
    import sys
    p = subprocess.run([sys.executable, "-c", _WORKER, str(light), *nodeids], cwd=PROJECT, capture_output=True,
                       text=True, timeout=60)
    assert p.returncode == 0, p.stderr
    start, *seen = p.stdout.split()
    return start, seen


def test_a_suite_worker_runs_each_test_and_what_it_starts_at_its_lanes_nice():
    import os
    b, a, u = ("tests/integration/test_field_mode.py::test_field", "tests/integration/test_bpf_cc.py::test_a",
               "tests/unit/test_x.py::test_y")
    start, seen = _worker(10, b, u)
    assert seen == ["10/10", "10/10"]                           # lane B, then unit tests: nice 10
    if os.geteuid() != 0:                      # a higher priority needs root: what follows is the suite run's (root)
        assert int(start) <= 10
        return
    assert start == "0"
    assert _worker(10, a, u, u) == ("0", ["0/0", "10/10", "10/10"])   # lane A's worker: nice 0, then its unit tests
    assert _worker(10, b, a, u)[1] == ["10/10", "0/0", "10/10"]       # a lane A requeued after a crash: back to 0
    assert _worker(0, b, a, u)[1] == ["0/0", "0/0", "0/0"]            # CTL_TEST_LIGHT_NICE=0: one priority


def test_the_light_nice_comes_from_the_environment_and_a_bad_one_is_refused(monkeypatch):
    from tests.conftest import light_nice_from_env
    monkeypatch.delenv("CTL_TEST_LIGHT_NICE", raising=False)
    assert light_nice_from_env() == LIGHT_NICE
    monkeypatch.setenv("CTL_TEST_LIGHT_NICE", "0")
    assert light_nice_from_env() == 0
    for bad in ("-5", "20", "ten", ""):
        monkeypatch.setenv("CTL_TEST_LIGHT_NICE", bad)
        with pytest.raises(pytest.UsageError, match="CTL_TEST_LIGHT_NICE"):
            light_nice_from_env()


def test_the_timeline_says_what_each_worker_ran_and_which_one_ended_last():
    ends = [("gw0", 20.0, "tests/integration/test_bpf_cc.py::test_a"),
            ("gw1", 15.0, "tests/integration/test_field_mode.py::test_field"),
            ("gw0", 700.5, "tests/integration/test_links.py::test_measure"),
            ("gw1", 400.0, "tests/integration/test_install.py::test_wheel"),
            ("gw1", 401.0, "tests/unit/test_x.py::test_y"),
            ("gw1", 520.0, "tests/unit/test_z.py::test_w"),
            ("gw0", 702.0, "tests/unit/test_q.py::test_r")]
    assert timeline(ends) == [
        "gw0: lane A: timed 0-700 s (2 tests), unit tests 700-702 s (1 test); done at 702 s  <- the wall time",
        "gw1: lane B1: light 0-400 s (2 tests), unit tests 400-520 s (2 tests); done at 520 s"]
    assert timeline([]) == []
