"""The papers' congestion controls through `ctl` itself, on a virtual rack of this test's own.

`ctl cc list` names every algorithm and where it comes from, the variants for analysis apart
with their reading; a run asking for one of ctl's BPF programs loads it on the senders, every
data subflow is seen running it, the record names its source, the sha256 of the object that
ran, for a variant its reading, and that its coupling map was empty before it was unloaded
(`assert_map_emptied`: a subflow the kernel freed without `.release` is taken out by the program
itself and counted, `subflows_reaped`), and nothing stays registered afterwards: not after a completed run, not after a kill -9 of the
controller (the next start recovers). Every variant runs once.
BPF struct_ops registrations are kernel-wide: the fixture takes back anything a run of this
test's rack still holds, so no later test sees it.
"""
from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from nodes.congestion import hostctl
from nodes.congestion.catalog import ALGORITHMS
from tests.support.kernel_cc import assert_nothing_left, run_holders, snapshot

pytestmark = pytest.mark.integration

def available() -> set[str]:
    """The kernel's registered congestion controls (tests/support/kernel_cc.py reads them)."""
    return set(snapshot().available)


def holders() -> dict:
    try:
        return json.loads(Path(hostctl.HOLDERS).read_text())
    except (OSError, ValueError):
        return {}


@pytest.fixture
def cc_rack(rack):
    """The session rack; afterwards every hold of its runs is taken back and nothing they held is
    left registered (tests/support/kernel_cc.py: what other racks on this kernel hold is theirs)."""
    before = snapshot()
    yield rack
    ours = run_holders(rack.runs_dir)
    for name, entry in holders().items():
        for h in list(entry.get("holders", [])):
            if h in ours:                                   # ours: never another rack's
                subprocess.run([sys.executable, hostctl.__file__, "unload", name, h], capture_output=True)
    assert_nothing_left(before, ours)


def assert_map_emptied(cong: dict, name: str) -> None:
    """The run's coupling map was empty when its program was unloaded, on every host that unloaded
    it, and the record says how many subflows the program took out itself because the kernel freed
    their socket without `.release` (`subflows_reaped`, nodes/congestion/bpf/ctl_cc.h: an int,
    printed; such a subflow no longer leaves an entry behind), with no warning about the map."""
    left = {h: st["conns_left"] for h, st in cong["hosts"].items() if "conns_left" in st}
    reaped = {h: st.get("subflows_reaped") for h, st in cong["hosts"].items() if "conns_left" in st}
    assert left and all(v == {name: 0} for v in left.values()), (left, cong.get("conns_leftovers"))
    assert all(isinstance(v, dict) and isinstance(v.get(name), int) for v in reaped.values()), reaped
    assert not any("coupling map" in w for w in cong.get("warnings", [])), cong["warnings"]
    print(f"\n{name}: coupling map empty at unload; subflows gone without .release, taken out: {reaped}")


def _wait_for_traffic(proc: subprocess.Popen, timeout: float = 60) -> None:
    assert proc.stderr is not None
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        line = proc.stderr.readline()
        if "traffic:" in line:
            return
        if not line and proc.poll() is not None:
            break
    raise AssertionError("traffic never started")


def test_cc_list_names_every_algorithm_and_its_origin(cc_rack):
    p = cc_rack.ctl("cc", "list", "--json")
    assert p.returncode == 0, p.stderr
    doc = json.loads(p.stdout)["data"]
    rows = {r["name"]: r for r in doc["algorithms"]}
    for name, alg in ALGORITHMS.items():
        assert rows[name]["kind"] == "bpf" and rows[name]["runnable"], rows[name]
        assert rows[name]["source"] == f"nodes/congestion/bpf/{alg.source}"
        assert (rows[name]["variant_of"], rows[name]["for_analysis"], rows[name]["reading"]) == \
            (alg.variant_of, alg.variant_of is not None, alg.reading)
    assert rows["cubic"]["kind"] == "kernel" and rows["cubic"]["runnable"]
    text = cc_rack.ctl("cc", "list")
    assert text.returncode == 0 and "olia" in text.stdout and "built into the kernel" in text.stdout
    listed_after = text.stdout.split("variants for analysis", 1)[1]
    assert all(f"{n}" in listed_after and f"variant of {a.variant_of}" in listed_after
               for n, a in ALGORITHMS.items() if a.variant_of)
    bad = cc_rack.ctl("cc", "lst")
    assert bad.returncode == 2 and len(bad.stderr.strip().splitlines()) == 1


def test_a_bpf_algorithm_runs_on_every_data_subflow_and_leaves_nothing(cc_rack):
    before = snapshot()
    p = cc_rack.ctl("run", "shared-bottleneck", "--delay", "20ms", "--cc", "olia", "--duration", "8s", "--json",
                    timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout)["data"]
    m = json.loads((Path(out["record"]) / "manifest.json").read_text())
    cong = m["congestion"]
    alg = cong["algorithms"]["olia"]
    assert alg["source"].endswith("olia.bpf.c") and len(alg["object_sha256"]) == 64
    assert len(alg["source_sha256"]) == 64 and alg["reference"] == ALGORITHMS["olia"].reference
    observed = cong["subflows"]["observed"]
    assert cong["subflows"]["problems"] == []
    assert len(observed["mptcp"]) == 2, observed                       # both subflows ...
    assert all(names == ["olia"] for names in observed["mptcp"].values())  # ... on olia only
    assert all(names == ["cubic"] for names in observed["tcp"].values())
    assert_nothing_left(before, run_holders(cc_rack.runs_dir))
    # the kernel's HyStart counters are Linux Cubic's: never shown as olia's (null, with the reason)
    senders = out["summary"]["sender_counters"]
    bpf = [e for e in senders.values() if e.get("hystart_not_counted_for") == ["olia"]]
    assert len(bpf) == 1 and bpf[0]["counters"]["TcpExtTCPHystartTrainDetect"] is None, senders
    cubic = [e for e in senders.values() if e not in bpf]                    # the TCP flow's sender: cubic
    assert cubic and all(isinstance(e["counters"]["TcpExtTCPHystartTrainDetect"], int) for e in cubic), senders
    assert cong["holder"].startswith("run:") and cong["holder"].endswith("/" + out["run_id"])
    assert not any(h == cong["holder"] for e in holders().values() for h in e["holders"])
    # the run checked the program's coupling map before unloading it: every connection's entry gone
    assert_map_emptied(cong, "olia")
    assert not cong.get("warnings"), cong["warnings"]


def test_mcubics_own_hystart_exits_reach_the_summary_with_whose_they_are(cc_rack):
    """A short mcubic run on the shared bottleneck (controller/results/hystart.py): the record keeps the
    program's own HyStart counts and every holder it had (hostctl's holders_seen); the summary gives
    them as the MPTCP sender's only when this run alone held the program, and then exactly the record's
    numbers; with another holder (another rack's run on this kernel) no number and "kernel-wide"."""
    p = cc_rack.ctl("run", "shared-bottleneck", "--delay", "20ms", "--cc", "mcubic", "--duration", "10s", "--json",
                    timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout)["data"]
    cong = json.loads((Path(out["record"]) / "manifest.json").read_text())["congestion"]
    mptcp, = (h for h, e in out["summary"]["sender_counters"].items() if e.get("hystart_not_counted_for") == ["mcubic"])
    own = out["summary"]["sender_counters"][mptcp]["own_hystart_exits"]["mcubic"]
    read = {h: st for h, st in cong["hosts"].items() if "mcubic" in (st.get("hystart_exits") or {})}
    if not read:    # another rack's run still held mcubic when this one left it: the last holder reads the counters
        assert own["ack_train"] is None and own["attribution"].startswith("kernel-wide, shared with"), own
        print(f"\nmcubic's own HyStart exits on {mptcp}: not this run's to read: {own}")
        return
    assert len(read) == 1, cong["hosts"]                  # the one host that unloaded it read the counters
    (host, st), = read.items()
    seen = st["holders_seen"]["mcubic"]
    assert isinstance(seen, list) and cong["holder"] in seen, st
    others = {h for h in seen if h != cong["holder"]}
    if others:
        assert own["ack_train"] is None and own["delay"] is None and own["other_holders"] >= len(others), own
        assert own["attribution"].startswith("kernel-wide, shared with"), own
    else:
        want = st["hystart_exits"]["mcubic"]
        assert (own["ack_train"], own["delay"], own["hosts"]) == (want["ack_train"], want["delay"], [mptcp]), own
        assert own["attribution"].startswith(f"{mptcp}'s: loaded for this run"), own
    print(f"\nmcubic's own HyStart exits on {mptcp} (read on {host}, holders seen {len(seen)}): {own}")


# (cubic314, a variant of the kernel's cubic that couples nothing: tests/integration/test_cubic314.py)
@pytest.mark.parametrize("variant", [n for n, a in ALGORITHMS.items() if a.variant_of and a.coupled])
def test_every_variant_runs_and_its_record_names_its_reading(cc_rack, variant):
    """Each variant for analysis through ctl run, 20 s on the shared bottleneck (the length issue 22's
    Done-when names): it completes, every data subflow ran it, and the record says what it is a
    variant of, which reading it is, the defines it was built with, and that its coupling map was
    empty at the end."""
    before = snapshot()
    p = cc_rack.ctl("run", "shared-bottleneck", "--delay", "20ms", "--cc", variant, "--duration", "20s", "--json",
                    timeout=400)
    assert p.returncode == 0, p.stderr[-2000:]
    m = json.loads((Path(json.loads(p.stdout)["data"]["record"]) / "manifest.json").read_text())
    assert m["status"] == "completed", m["status"]
    cong = m["congestion"]
    alg, want = cong["algorithms"][variant], ALGORITHMS[variant]
    assert (alg["variant_of"], alg["reading"], alg["defines"]) == (want.variant_of, want.reading, list(want.defines))
    assert alg["source"] == f"nodes/congestion/bpf/{want.source}" and len(alg["object_sha256"]) == 64
    assert cong["subflows"]["problems"] == []
    assert all(names == [variant] for names in cong["subflows"]["observed"]["mptcp"].values())
    assert_map_emptied(cong, variant)
    left = {h: st["conns_left"] for h, st in cong["hosts"].items() if "conns_left" in st}
    refused = {h: st["coupling_refused"] for h, st in cong["hosts"].items() if "coupling_refused" in st}
    assert refused.keys() == left.keys() and all(v == {variant: 0} for v in refused.values()), refused
    if want.variant_of == "mcubic":
        # MCubic's own HyStart exits, read from the program before it was unloaded (the kernel's
        # TcpExtTCPHystart* count only its Cubic): kept per host that unloaded it; none without HyStart
        hs = {h: cong["hosts"][h].get("hystart_exits", {}).get(variant) for h in left}
        if "MC_NOHS" in want.defines:
            assert all(v is None for v in hs.values()), hs        # no HyStart, no counters
        else:
            assert all(isinstance(v, dict) and set(v) == {"ack_train", "delay"} and
                       all(isinstance(n, int) and n >= 0 for n in v.values()) for v in hs.values()), hs
        print(f"\n{variant}: its own HyStart exits per sender host: {hs}")
    assert_nothing_left(before, run_holders(cc_rack.runs_dir))


def test_bbr3_runs_the_rtt_loss_sweep_on_every_data_flow_and_leaves_nothing(cc_rack):
    """The BBRv3 paper's case through ctl: rtt-loss-sweep --cc bbr3 loads ctl's BPF BBRv3, the data
    flow runs it (seen in `ss`), the record names its specification (the draft revision) and its
    differences from it, `ctl cc list` lists it as runnable with both and the kernel's bbr as v1,
    and nothing stays registered."""
    before = snapshot()
    p = cc_rack.ctl("run", "rtt-loss-sweep", "--cc", "bbr3", "--bw", "100M", "--rtt", "40ms", "--loss", "0.1%",
                    "--duration", "8s", "--json", timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    out = json.loads(p.stdout)["data"]
    m = json.loads((Path(out["record"]) / "manifest.json").read_text())
    assert m["status"] == "completed" and out["summary"]["valid"], out["summary"].get("invalid_reasons")
    cong = m["congestion"]
    alg, want = cong["algorithms"]["bbr3"], ALGORITHMS["bbr3"]
    assert alg["source"] == "nodes/congestion/bpf/bbr3.bpf.c" and len(alg["object_sha256"]) == 64
    assert (alg["specification"], alg["differences"], alg["title"]) == \
        ("draft-ietf-ccwg-bbr-06", list(want.differences), "BBRv3 after draft-ietf-ccwg-bbr-06, BPF")
    assert cong["subflows"]["problems"] == [] and cong["subflows"]["observed"]["tcp"]
    assert all(names == ["bbr3"] for names in cong["subflows"]["observed"]["tcp"].values())
    assert "kernel_bbr" not in cong and not cong.get("warnings")
    assert_nothing_left(before, run_holders(cc_rack.runs_dir))
    assert not any(h == cong["holder"] for e in holders().values() for h in e["holders"])
    rows = {r["name"]: r for r in json.loads(cc_rack.ctl("cc", "list", "--json").stdout)["data"]["algorithms"]}
    assert rows["bbr3"]["runnable"] and rows["bbr3"]["specification"] == "draft-ietf-ccwg-bbr-06"
    assert rows["bbr3"]["differences"] == list(want.differences) and rows["bbr"]["label"] == "bbr (kernel: v1 here)"


def test_a_killed_controller_leaves_the_program_until_the_next_start_recovers(cc_rack):
    before = snapshot()
    proc = cc_rack.popen("run", "shared-bottleneck", "--delay", "20ms", "--cc", "balia", "--duration", "30s")
    _wait_for_traffic(proc)
    time.sleep(2)
    assert "balia" in available()                         # loaded for the run
    os.kill(proc.pid, signal.SIGKILL)                     # no clean-up at all
    proc.wait(timeout=30)
    assert "balia" in available()                         # the dead run still holds it
    p = cc_rack.ctl("run", "shared-bottleneck", "--delay", "20ms", "--cc", "cubic", "--duration", "3s", timeout=300)
    assert p.returncode == 0, p.stderr[-2000:]
    assert_nothing_left(before, run_holders(cc_rack.runs_dir))
    killed = sorted(cc_rack.runs_dir.glob("*cc-balia*"))[-1]
    m = json.loads((killed / "manifest.json").read_text())
    assert m["status"] in ("aborted", "interrupted"), m["status"]


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143)])
def test_an_aborted_run_unloads_its_program_itself(cc_rack, sig, code):
    """Ctrl-C or SIGTERM mid-traffic (issue 24: a BPF algorithm's lifecycle on every way a run ends):
    the run restores the rack itself, its hold on the program goes with it, and nothing is left
    registered for the next start to recover (unlike kill -9, above)."""
    before = snapshot()
    proc = cc_rack.popen("run", "rtt-loss-sweep", "--rtt", "40ms", "--loss", "0.1%", "--cc", "bbr3", "--bw", "20M",
                         "--duration", "30s")
    _wait_for_traffic(proc)
    time.sleep(2)
    assert "bbr3" in available()                          # loaded for the run
    proc.send_signal(sig)
    out, err = proc.communicate(timeout=120)
    assert proc.returncode == code, err[-2000:]
    assert_nothing_left(before, run_holders(cc_rack.runs_dir))
    rec = Path(out.split("record: ")[1].split()[0])
    m = json.loads((rec / "manifest.json").read_text())
    assert m["status"] == "aborted" and signal.Signals(sig).name in m["errors"][0]["error"], m["errors"]
    assert not m.get("restore_problems"), m.get("restore_problems")


# The BitTorrent step with --cc lia (the hosts' default for the run, given back afterwards):
# tests/integration/test_scenarios_more.py, test_mptcp_bittorrent_global_tracker (one run for both).


class ThisMachineAsAnEndpoint:
    """A Session that runs each command on this machine: it stands in for a physical rack's
    endpoint (we have none), so the physical path (the endpoint's BTF read over the session,
    a build for it on the controller, the object shipped back and checked) runs for real
    against a real kernel. Commands are argv lists; stdin is passed as the SSH channel would."""

    host = "endpoint1"

    def __init__(self) -> None:
        self.log: list[tuple[str, ...]] = []

    async def run(self, command):
        from controller.commands import CommandResult
        self.log.append(command.argv)
        p = subprocess.run(list(command.argv), input=command.stdin, capture_output=True, text=True,
                           timeout=command.timeout)
        return CommandResult(self.host, command.argv, p.returncode, p.stdout, p.stderr, note=command.note)


def test_the_physical_rack_path_builds_for_the_endpoints_btf_and_ships_the_object(tmp_path, monkeypatch):
    """CongestionStage for a rack whose endpoints are other machines: nothing is built from the
    controller's own BTF path, the object goes to the endpoint by `hostctl put` with its
    sha256, loads there, and leaves on restore."""
    import asyncio
    from types import SimpleNamespace

    from controller.run.congestion import OBJECTS_ON_HOST, CongestionStage
    from nodes.mptcp import EndpointConfig

    monkeypatch.setenv("CTL_STATE_DIR", str(tmp_path / "state"))
    objects_before = set(os.listdir(OBJECTS_ON_HOST)) if os.path.isdir(OBJECTS_ON_HOST) else set()
    before = snapshot()
    endpoint = ThisMachineAsAnEndpoint()
    manifest: dict = {}
    stage = CongestionStage("20261124T000000Z_physical-path-test", SimpleNamespace(kind="physical", name="phys"),
                            {"endpoint1": EndpointConfig(congestion_controls=frozenset({"mcubic"}))},
                            {"endpoint1": endpoint}, manifest, dry_run=False, progress=lambda s: None)
    shipped = []
    try:
        asyncio.run(stage.prepare())
        asyncio.run(stage.configure())
        assert "mcubic" in available()
        alg = manifest["congestion"]["algorithms"]["mcubic"]
        on_host = f"{OBJECTS_ON_HOST}/{alg['object_sha256']}.bpf.o"
        shipped.append(on_host)
        assert os.path.exists(on_host)
        import hashlib
        assert hashlib.sha256(Path(on_host).read_bytes()).hexdigest() == alg["object_sha256"]
        argvs = [a for a in endpoint.log]
        assert ("base64", "-w0", "/sys/kernel/btf/vmlinux") in argvs        # the endpoint's BTF, read remotely
        assert any(a[-3:-1] == ("put", alg["object_sha256"]) for a in argvs if len(a) >= 3)
        # the build is keyed by the BTF it was made for, kept in the controller's state dir
        assert (tmp_path / "state" / "congestion" / "btf").is_dir()
        # Registrations are kernel-wide: a run of another rack on this kernel (a researcher's
        # campaign, another checkout's suite) may hold mcubic too. Then this run only leaves its
        # hold, and the map's emptiness is the last holder's to check.
        others = [h for h in holders().get("mcubic", {}).get("holders", []) if h != stage.holder]
        problems: list[str] = []
        asyncio.run(stage.restore_host("endpoint1", problems))
        assert problems == []
        assert stage.holder not in holders().get("mcubic", {}).get("holders", [])
        if others:
            assert "conns_left" not in manifest["congestion"]["hosts"]["endpoint1"]
            assert "mcubic" in available()
        else:
            assert manifest["congestion"]["hosts"]["endpoint1"]["conns_left"] == {"mcubic": 0}   # checked, then left
            assert_nothing_left(before, {stage.holder})
    finally:
        for name in ("mcubic",):
            subprocess.run([sys.executable, hostctl.__file__, "unload", name, stage.holder], capture_output=True)
        for f in shipped:
            if os.path.basename(f) not in objects_before:
                Path(f).unlink(missing_ok=True)
