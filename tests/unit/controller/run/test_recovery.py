"""Recovery trusts only what is provably its own: records of this rack written with this state
dir, and PIDs that still name the recorded process (same start time on the host, same program)."""
from __future__ import annotations

import json
import os
import socket
from types import SimpleNamespace

from controller.results.records import FORMAT_VERSION
from controller.results.timefields import lstart_utc
from controller.run.recovery import interrupted_runs, process_record, program_of, same_process, start_command

START = "Tue Nov 24 15:02:33 2026"


def test_the_program_behind_launchers():
    assert program_of(["mptcpize", "run", "iperf3", "-s"]) == "iperf3"
    assert program_of(["/usr/bin/iperf3", "-c", "x"]) == "iperf3"
    assert program_of(["ip", "mptcp", "monitor"]) == "ip"
    assert program_of(["mptcpize"]) == "mptcpize"


def test_a_process_record_names_start_time_program_and_argv_without_constant_scripts():
    script = "x" * 5000
    p = SimpleNamespace(host="a1", pid=42, argv=("python3", "-c", script, "0.1"), note="sampler",
                        started=1.0, host_start=START)
    r = process_record(p)
    assert r["pid"] == 42 and r["host_start"] == lstart_utc(START) == 1795532553.0 and r["program"] == "python3"
    assert r["argv"][2].startswith("<5000 bytes sha256:") and r["argv"][3] == "0.1"
    assert json.dumps(r)


def test_same_process_needs_the_same_start_time_and_program():
    # format 2: the start in Unix seconds, compared with ps under TZ=UTC0; format 1: the host's
    # local time as ps printed it, compared with ps in the host's zone (start_command says which)
    for rec in ({"pid": 42, "program": "iperf3", "host_start": lstart_utc(START)},
                {"pid": 42, "program": "iperf3", "host_start_local": START}):
        assert same_process(rec, START + "\n", "iperf3 -s -p 5201 -1\n")
        assert same_process(rec, "Tue  Nov 24 15:02:33 2026", "/usr/bin/iperf3 -s")     # spacing as ps pads it
        assert not same_process(rec, "Tue Nov 24 15:02:34 2026", "iperf3 -s")          # a reused PID
        assert not same_process(rec, START, "sshd: root@pts/0")                         # another program
        assert not same_process(rec, START, "")
        assert not same_process(rec, "", "iperf3 -s")
    assert start_command({"host_start": 1.0}, "42").argv == ("env", "TZ=UTC0", "ps", "-o", "lstart=", "-p", "42")
    assert start_command({"host_start_local": START}, "42").argv == ("ps", "-o", "lstart=", "-p", "42")
    # Records of an older ctl (no start time) or with an empty program are never trusted.
    assert not same_process({"pid": 42, "argv0": "", "program": ""}, START, "anything at all")
    assert not same_process({"pid": 42, "argv0": "iperf3"}, START, "iperf3 -s")
    assert not same_process({"pid": 42, "program": "iperf3", "host_start": None}, START, "iperf3 -s")


def _record(root, name, *, inventory="virtual", state_dir=None, status="running", pid=999999):
    d = root / name
    d.mkdir(parents=True)
    (d / "manifest.json").write_text(json.dumps({
        "format_version": FORMAT_VERSION, "status": status, "dry_run": False, "inventory": {"name": inventory},
        "controller": {"host": socket.gethostname(), "pid": pid, "state_dir": state_dir}}))
    return d


def test_only_records_of_this_rack_and_this_state_dir_are_recovered(tmp_path, tmp_state_dir, invs):
    inv = invs["virtual"]
    mine = str(tmp_state_dir.resolve())
    runs = tmp_path / "runs"
    ok = _record(runs, "a", state_dir=mine)
    _record(runs, "b", state_dir="/somebody/elses/.state")      # another checkout's rack
    _record(runs, "c", state_dir=mine, inventory="other-rack")
    _record(runs, "d", state_dir=None)                            # no owner recorded: not ours
    _record(runs, "e", state_dir=mine, status="completed")
    _record(runs, "f", state_dir=mine, pid=os.getpid())           # this very controller
    assert interrupted_runs(runs, inv) == [ok]


def test_the_start_up_check_reads_a_records_status_from_its_first_bytes(tmp_path, tmp_state_dir, invs):
    """Every `ctl run` looks for interrupted runs among all records: a finished record is passed
    over on the status its manifest starts with (as RunRecord writes it), a running one, or one
    whose start says nothing (another layout), is read whole."""
    from controller.results.records import RunRecord
    from controller.run.recovery import recorded_status
    inv = invs["virtual"]
    runs = tmp_path / "runs"
    runs.mkdir()
    done = RunRecord(runs, "done")
    # a campaign name that quotes a status line does not fool the check
    done.start(scenario="x", parameters={}, inventory={"name": inv.name}, inventory_file="",
               campaign='c\n "status": "running"')
    done.finish("completed")
    assert recorded_status(done.dir / "manifest.json") == "completed"
    live = RunRecord(runs, "live")
    live.start(scenario="x", parameters={}, inventory={"name": inv.name}, inventory_file="")
    live.manifest["controller"]["pid"] = 999999          # its controller is gone
    live.save()
    assert recorded_status(live.dir / "manifest.json") == "running"
    compact = _record(runs, "compact", state_dir=str(tmp_state_dir.resolve()))  # one line: read whole
    assert recorded_status(compact / "manifest.json") is None
    assert interrupted_runs(runs, inv) == [compact, live.dir]


def test_recovery_ends_the_processes_only_the_journal_names(tmp_path):
    """A run appends each process to processes.jsonl the moment its PID is known and saves the
    manifest with it a moment later: a controller killed between the two leaves a process only the
    journal names, and recovery must end it too (a torn last line, a kill mid-write, is skipped)."""
    from controller.run.recovery import JOURNAL, ProcessJournal, recorded_processes
    a = process_record(SimpleNamespace(host="a1", pid=41, argv=("iperf3", "-s"), note="iperf3 server", started=1.0,
                                       host_start=START))
    b = process_record(SimpleNamespace(host="b1", pid=42, argv=("ip", "mptcp", "monitor"), note="MPTCP events",
                                       started=1.5, host_start=START))
    j = ProcessJournal(tmp_path)
    j.add(a)
    j.add(b)
    j.close()
    with open(tmp_path / JOURNAL, "a") as fh:
        fh.write('{"host": "a2", "pid": 4')                  # torn
    assert recorded_processes(tmp_path, {"processes": [a]}) == [a, b]
    assert recorded_processes(tmp_path, {"processes": [a, b]}) == [a, b]
    assert recorded_processes(tmp_path / "nothing", {"processes": [a]}) == [a]   # older records: no journal


def test_a_burst_of_processes_is_journalled_each_and_saved_in_the_manifest_once(tmp_path):
    """The samplers, monitors and servers of a run start together: each is in the journal when
    its PID is known, and the manifest is saved once for all that started in the same turn of the
    event loop (a save re-encodes the whole manifest, ~100 KB by then)."""
    import asyncio

    from controller import scenarios
    from controller.inventory import load_inventory
    from controller.results.records import RunRecord
    from controller.run.recovery import JOURNAL
    from controller.run.runner import Run
    from tests.support.shipped import VIRTUAL, no_state_dir

    class Counted(RunRecord):
        saves = 0

        def save(self) -> None:
            Counted.saves += 1
            super().save()

    with no_state_dir():
        inv = load_inventory(VIRTUAL)
        sc = scenarios.get("distinct-bottleneck")
        params, given = sc.parse_args([])
        plan = sc.plan(params, inv)
        rec = Counted(tmp_path, "r")
        rec.start(scenario=sc.name, parameters={}, inventory={"name": inv.name}, inventory_file="")
        run = Run(sc, params, given, inv, plan, rec)
    procs = [SimpleNamespace(host=h, pid=100 + i, argv=("python3", "-c", "x"), note="sampler", started=2.0 + i,
                             host_start=START) for i, h in enumerate(("a1", "b1", "br1"))]

    async def burst() -> tuple[int, list, list]:
        Counted.saves = 0
        for p in procs:
            run._record_spawn(p)
        journal = [json.loads(line) for line in (tmp_path / "r" / JOURNAL).read_text().splitlines()]
        on_disk = json.loads((tmp_path / "r" / "manifest.json").read_text())["processes"]
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        return Counted.saves, journal, on_disk

    saves, journal, before_save = asyncio.run(burst())
    assert [p["pid"] for p in journal] == [100, 101, 102]       # on disk at once
    assert before_save == []                                     # the manifest a moment later...
    assert saves == 1                                            # ...in one save for the three
    assert [p["pid"] for p in json.loads((tmp_path / "r" / "manifest.json").read_text())["processes"]] == \
        [100, 101, 102]
    asyncio.run(run.close())
