"""Shared fixtures. Integration tests get one real virtual rack per session (see support/rack.py)."""
from __future__ import annotations

import os
import shutil
import sys
import time
from pathlib import Path

import pytest

PROJECT = Path(__file__).resolve().parent.parent
if str(PROJECT) not in sys.path:
    sys.path.insert(0, str(PROJECT))

from tests.support.lanes import LANE_A, LIGHT_NICE, lane_of, nice_of, rack_scheduling, timeline  # noqa: E402
from tests.support.rack import (TestRack, free_mgmt_octet, make_state_dir, rack_build_lock, release_cc_holds,  # noqa: E402
                                sweep_stale_test_racks, write_test_inventory)

REQUIRED = ("ip", "tc", "sshd", "iperf3", "mptcpize", "ethtool", "ss", "nstat", "ssh-keygen")
SUITE_WORKERS = 3
_RACK_SCHEDULING = pytest.StashKey[bool]()
_LIGHT_NICE = pytest.StashKey[int]()
_ENDS = pytest.StashKey[list]()          # (worker, seconds since the start, nodeid) as each test ends


@pytest.hookimpl(tryfirst=True)
def pytest_cmdline_main(config: pytest.Config) -> None:
    """The whole suite (`python -m pytest` with no paths: the README's command) runs on three
    pytest-xdist workers: the integration tests in lanes (tests/support/lanes.py), lane A on one
    worker, the two halves of lane B on the two others, each worker with its own virtual rack,
    all started together; the unit-test modules after them, on the workers the light lanes free
    (see lanes.rack_scheduling); lane A at nice 0, every other test at nice 10 (lanes.nice_of,
    CTL_TEST_LIGHT_NICE). CTL_TEST_WORKERS=2 runs lane A on one worker and lane B on the
    other; a run naming files or directories, `-n` given, or CTL_TEST_WORKERS=0 (or 1) runs as
    before, in one process."""
    if not config.pluginmanager.hasplugin("xdist") or hasattr(config, "workerinput"):
        return
    if config.option.numprocesses is not None or config.getoption("collectonly"):
        return
    if config.args_source is not pytest.Config.ArgsSource.TESTPATHS:
        return
    workers = int(os.environ.get("CTL_TEST_WORKERS", SUITE_WORKERS))
    if workers > 1:
        config.option.numprocesses = workers
        config.option.dist = "loadscope"
        config.stash[_RACK_SCHEDULING] = True
        config.stash[_LIGHT_NICE] = light_nice_from_env()
        config.stash[_ENDS] = [time.monotonic()]


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log):
    """(pytest-xdist, the suite run chosen above) Work units: each lane of integration tests
    (they share their worker's virtual rack: never two runs on one rack at once, in lane order),
    each unit-test module on its own (its module-scoped fixtures are built once)."""
    if not config.stash.get(_RACK_SCHEDULING, False):
        return None
    return rack_scheduling(config, log)


def light_nice_from_env() -> int:
    """CTL_TEST_LIGHT_NICE: the suite run's nice for every test but lane A's (default LIGHT_NICE;
    0 runs every worker at one priority)."""
    raw = os.environ.get("CTL_TEST_LIGHT_NICE", str(LIGHT_NICE))
    if not raw.isdigit() or int(raw) > 19:
        raise pytest.UsageError(f"CTL_TEST_LIGHT_NICE: {raw!r} is not a nice value from 0 to 19")
    return int(raw)


@pytest.hookimpl(optionalhook=True)
def pytest_configure_node(node) -> None:
    """(pytest-xdist, the suite run chosen above) Each worker is told the nice of the tests that are
    not lane A's (tests/support/lanes.py, "Priority")."""
    if node.config.stash.get(_RACK_SCHEDULING, False):
        node.workerinput["ctl_light_nice"] = node.config.stash[_LIGHT_NICE]


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item) -> None:
    """In the suite run a worker runs each test at its lane's nice (lanes.nice_of), before its
    fixtures are set up: what the test starts (a rack's daemons with the session's first test)
    inherits it. Only the worker's own priority changes; the worker process ends with the run."""
    light = getattr(item.config, "workerinput", {}).get("ctl_light_nice")
    if light is None:
        return
    want = nice_of(item.nodeid, light)
    if os.getpriority(os.PRIO_PROCESS, 0) != want:
        try:
            os.setpriority(os.PRIO_PROCESS, 0, want)
        except PermissionError:     # back to a higher priority needs root; the results do not depend on it
            pass


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """(the suite run's controller) When each test ended, and on which worker: the timeline below."""
    node = getattr(report, "node", None)
    if report.when == "teardown" and node is not None:
        ends = node.config.stash.get(_ENDS, None)
        if ends is not None:
            ends.append((node.gateway.id, time.monotonic() - ends[0], report.nodeid))


def pytest_terminal_summary(terminalreporter, config: pytest.Config) -> None:
    """The suite run ends with its critical path: per worker, its lanes and unit tests in order, with
    when each stretch ended (lanes.timeline); the worker that ended last is the wall time."""
    ends = config.stash.get(_ENDS, None)
    if ends and len(ends) > 1:
        terminalreporter.write_sep("-", "suite timeline (seconds since the start)")
        for line in timeline(ends[1:]):
            terminalreporter.write_line(line)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every integration test carries its lane as a marker (`-m lane_b` runs lane B alone)."""
    for item in items:
        lane = lane_of(item.nodeid)
        if lane is not None:
            item.add_marker("lane_a" if lane == LANE_A else "lane_b")


@pytest.fixture(autouse=True)
def _end_leftover_runs(request: pytest.FixtureRequest):
    """A test that fails while its `ctl run` still goes must not leave the rack (and its lock)
    to the next test: what it started and left running is interrupted after it."""
    yield
    for name in ("rack", "tc_rack"):
        if name in request.fixturenames:
            request.getfixturevalue(name).end_started()


@pytest.fixture(scope="session", autouse=True)
def _session_lock_dir(tmp_path_factory: pytest.TempPathFactory):
    """Rack locks are machine-wide (/run/lock/ctl): the suite keeps its own, so a developer's
    run on the same machine neither blocks a test nor is blocked by one. Child ctl processes
    inherit it."""
    saved = os.environ.get("CTL_LOCK_DIR")
    os.environ["CTL_LOCK_DIR"] = str(tmp_path_factory.mktemp("locks"))
    yield
    if saved is None:
        os.environ.pop("CTL_LOCK_DIR", None)
    else:
        os.environ["CTL_LOCK_DIR"] = saved


@pytest.fixture(scope="module")
def rack_b(tmp_path_factory: pytest.TempPathFactory, rack: TestRack) -> TestRack:
    """A second rack (its own name `vtestb`, prefix wNNNNN, subnet, InfluxDB and state dir) for the
    shared-lab tests: two racks, one campaign. It is reached as many labs reach theirs: a1 and br2
    log in as the account `ctl` with `sudo -n`, b2 only through a bastion (support/rack.py)."""
    saved = os.environ.get("CTL_STATE_DIR")
    r, inv = _build_rack(tmp_path_factory, "w", name="vtestb", access=True)
    try:
        yield r
    finally:
        _teardown(inv, r.prefix, r.runs_dir)
        if saved is not None:
            os.environ["CTL_STATE_DIR"] = saved


@pytest.fixture(scope="session")
def bpf_trace_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """Where the session's trace builds of ctl's BPF programs go (-DCTL_TRACE; nodes/congestion/build.py
    reuses a build made there for the same kernel BTF, sources and clang target): the modules that
    replay traces (test_bpf_cc, test_bpf_churn, test_cubic314, test_bbr3; all in lane A, one worker)
    compile each program once per session instead of once per module. Builds of other kinds, and the
    check that two builds are identical, keep their own directories."""
    return tmp_path_factory.mktemp("cc-trace-build")


@pytest.fixture(scope="session")
def local_cc_build(tmp_path_factory: pytest.TempPathFactory):
    """`seed(state_dir)`: ctl's BPF programs for this machine's kernel put into a state dir as if
    built there (state/congestion/<btf-id>/, its manifest naming the copies), so that a command
    finds the build it would otherwise compile first (nodes/congestion/build.py reuses an
    unchanged build; the first build is the integration tests' to test). Made once per suite run
    -- the xdist workers share it, under the run's base temp dir and a lock; the checkout's own
    build is taken where build() finds it current -- instead of once per test that queues a
    reproduction on the virtual inventory (7.7 CPU-s each)."""
    import fcntl
    import json

    from nodes.congestion.build import LOCAL_BTF, build
    root = tmp_path_factory.getbasetemp()
    if os.environ.get("PYTEST_XDIST_WORKER"):
        root = root.parent              # the run's own directory, shared by its workers

    def copy(made: Path, target: Path) -> Path:
        shutil.copytree(made, target)
        manifest = json.loads((target / "manifest.json").read_text())
        for obj in manifest.get("objects", {}).values():
            obj["path"] = str(target / Path(obj["path"]).name)
        (target / "manifest.json").write_text(json.dumps(manifest, indent=1))
        return target

    def seed(state: Path) -> Path:
        with open(root / "cc-local-build.lock", "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            cache = root / "cc-local-build"
            if not cache.exists():
                # the checkout's own build (scripts/setup.sh makes it), read only: build() below
                # reuses it only where it is this kernel's, of these sources, complete
                for mine in sorted((PROJECT / ".state" / "congestion").glob("*/manifest.json")):
                    if not mine.parent.name.endswith("-trace"):
                        copy(mine.parent, cache / mine.parent.name)
            made = build(LOCAL_BTF, cache)
        return copy(made.directory, state / "congestion" / made.directory.name)
    return seed


@pytest.fixture(scope="session")
def pg_server():
    """One real PostgreSQL server for the session (Debian's package, started here on a private
    Unix socket; see support/postgres.py). Tests take a fresh database each (`pg_url`)."""
    from tests.support.postgres import PostgresServer
    server = PostgresServer().start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def pg_url(pg_server) -> str:
    """The URL of a new, empty lab database for this test."""
    return pg_server.fresh_database()


def _integration_prerequisites() -> list[str]:
    problems = []
    if os.geteuid() != 0:
        problems.append("not root")
    for tool in REQUIRED:
        if shutil.which(tool) is None and not Path("/usr/sbin", tool).exists():
            problems.append(f"{tool} missing")
    if not (PROJECT / ".state" / "bin" / "influxd").exists():
        problems.append("influxd not built (.state/bin/influxd)")
    if not (PROJECT / ".state" / "bin" / "dnpipe").exists():
        problems.append("dnpipe not built/installed (.state/bin/dnpipe)")
    return problems


def _build_rack(tmp_path_factory: pytest.TempPathFactory, letter: str, shaper: str | None = None,
                name: str = "vtest", access: bool = False):
    problems = _integration_prerequisites()
    if problems:
        # Not a skip: these tests are part of the suite; scripts/setup.sh provides all of it.
        pytest.fail("integration prerequisites missing: " + ", ".join(problems) + " (run scripts/setup.sh)")
    from controller.inventory import load_inventory
    from controller.lab.ops import lab_up_cli
    base = tmp_path_factory.mktemp(f"rack-{letter}")
    state = make_state_dir(base / "state")
    os.environ["CTL_STATE_DIR"] = str(state)
    os.environ.pop("CTL_INFLUX_TOKEN", None)
    # Unique per process (a session, or each xdist worker of one): racks built at the same moment
    # never share a prefix (the pid), and one at a time on this machine they choose a management
    # subnet no interface uses and take it (lab up), so two never choose the same.
    prefix = f"{letter}{os.getpid() % 100000:05d}"
    with rack_build_lock():
        sweep_stale_test_racks()
        octet = free_mgmt_octet()
        inv_path = write_test_inventory(base / f"{name}.yaml", prefix=prefix, mgmt_octet=octet,
                                        influx_port=18000 + octet, shaper=shaper, name=name, access=access)
        inv = load_inventory(inv_path)
        lab_up_cli(inv)
    runs = base / "runs"
    runs.mkdir()
    return TestRack(inv_path, state, runs, prefix, inv), inv


def _teardown(inv, prefix: str, runs_dir: Path | None = None) -> None:
    from controller.lab.rack import lab_down
    if runs_dir is not None:
        release_cc_holds(runs_dir)      # kernel-wide: never left for the next test
    lab_down(inv)
    shutil.rmtree(Path("/run/ctl") / prefix, ignore_errors=True)


@pytest.fixture(scope="session")
def rack(tmp_path_factory: pytest.TempPathFactory) -> TestRack:
    """The shipped virtual rack (dnpipe bridges), prefix tNNNNN, its own management subnet,
    InfluxDB and state dir."""
    r, inv = _build_rack(tmp_path_factory, "t")
    try:
        yield r
    finally:
        _teardown(inv, r.prefix, r.runs_dir)


@pytest.fixture(scope="module")
def tc_rack(tmp_path_factory: pytest.TempPathFactory, rack: TestRack) -> TestRack:
    """The same rack with Linux tc (tbf) bridges: the kernel back-end stays tested end to end.
    (Built after `rack`, whose state dir it then uses for its own InfluxDB data.)"""
    saved = os.environ.get("CTL_STATE_DIR")
    r, inv = _build_rack(tmp_path_factory, "u", shaper="tc")
    try:
        yield r
    finally:
        _teardown(inv, r.prefix, r.runs_dir)
        if saved is not None:
            os.environ["CTL_STATE_DIR"] = saved
