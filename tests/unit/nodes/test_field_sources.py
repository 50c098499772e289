"""The logger's measuring sources against local stand-ins (no rack): gpsd (a TCP server speaking the
recorded gpsd JSON of 02e), ModemManager (a fake `mmcli` printing emulator.mmcli_outputs() -- the
ModemManager-shaped TEST DOUBLE, in the shapes of the real 1.20.4 captures), the serial AT emulator (TEST DOUBLE) on a pty, and a workload
process replaying webtorrent-cli's recorded output.
"""
from __future__ import annotations

import json
import os
import socket
import stat
import sys
import threading
import time

from nodes.fieldlog import sources as S
from nodes.modem.emulator import CELL_A, AtModemEmulator, ManualClock, field_test_trace
from tests.support.shipped import ROOT

FIXTURES = ROOT / "tests" / "fixtures" / "recorded"


def _tpv_lines() -> list[bytes]:
    lines = [line for line in (FIXTURES / "02e_gpsd_gpspipe.md").read_text().splitlines()
             if line.startswith('{"class":"TPV"') and "xxx" not in line]
    return [line.encode() for line in lines]


def test_gps_source_keeps_the_latest_tpv_from_gpsd():
    srv = socket.socket()
    srv.bind(("127.0.0.1", 0))
    srv.listen(1)
    port = srv.getsockname()[1]
    tpvs = _tpv_lines()
    got_watch: list[bytes] = []

    def gpsd() -> None:
        conn, _ = srv.accept()
        with conn:
            conn.sendall(b'{"class":"VERSION","release":"3.22"}\n')
            got_watch.append(conn.recv(1024))
            for line in tpvs:
                conn.sendall(line + b"\n")
            time.sleep(1.0)
    t = threading.Thread(target=gpsd, daemon=True)
    t.start()
    g = S.GpsSource(f"127.0.0.1:{port}", max_age_s=5.0)
    g.start()
    try:
        deadline = time.monotonic() + 5
        fix = None
        while time.monotonic() < deadline:
            fix = g.latest()
            if fix is not None and fix.time == "2034-11-01T17:19:27.000Z":
                break
            time.sleep(0.05)
        assert fix is not None and fix.lat == 44.069009667 and fix.speed_mps == 0.043 and fix.alt_m == 1147.0
        assert got_watch and got_watch[0].startswith(b"?WATCH=")
    finally:
        g.stop()
        srv.close()


def test_gps_fix_too_old_is_not_used():
    g = S.GpsSource("127.0.0.1:1", max_age_s=0.5)
    g._latest = (time.monotonic() - 1.0, object())
    assert g.latest() is None


FAKE_MMCLI = """#!{python}
# A stand-in for mmcli (TEST DOUBLE): prints what ModemManager 1.20.4 prints for the drive trace at t=5 s
# (emulator.mmcli_outputs: the shapes of the real captures in tests/fixtures/generated/modemmanager).
import sys
sys.path.insert(0, {root!r})
from nodes.modem.emulator import field_test_trace, mmcli_list, mmcli_outputs
args = sys.argv[1:]
out = mmcli_outputs(field_test_trace(), 5.0)
if "-L" in args:
    print(mmcli_list([0]))
elif "--signal-get" in args:
    print(out["signal"])
elif "--location-get" in args:
    print(out["location"])
elif "-J" in args:
    print(out["modem"])
"""


def test_radio_source_runs_the_mmcli_family_as_processes(tmp_path, monkeypatch):
    fake = tmp_path / "bin" / "mmcli"
    fake.parent.mkdir()
    fake.write_text(FAKE_MMCLI.format(python=sys.executable, root=str(ROOT)))
    fake.chmod(fake.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{fake.parent}{os.pathsep}{os.environ['PATH']}")
    src = S.RadioSource(S.ModemSettings("mmcli", "867978050021665"), timeout_s=10.0)     # by its IMEI
    src.start()
    try:
        assert src.request(1)
        assert not src.request(2)                      # one round at a time: a busy modem is a missing sample
        sample, raw = src.result(1, time.monotonic() + 20)
    finally:
        src.stop()
    want = field_test_trace().truth_at(5.0)
    # ModemManager reads an AT modem's LTE rsrp/rsrq from +CESQ; it has no SINR/SNR for it
    assert sample.technology == "lte" and sample.rsrp_dbm == want.rsrp_dbm and sample.rsrq_db == want.rsrq_db
    assert sample.cell_id_int == CELL_A.eci and set(raw["replies"]) == {"modem", "signal", "location"}
    # the values are the daemon's last ones, and it says they are recent (its own flag): the round says so
    assert raw["provenance"] == {"read_from": "daemon", "daemon_recent": True}


def test_radio_source_over_the_at_emulator_on_a_pty():
    trace = field_test_trace()
    clock = ManualClock(31.0)                           # inside the trace's modem reset
    with AtModemEmulator(trace, clock) as emu:
        src = S.RadioSource(S.ModemSettings("at-quectel", emu.path), timeout_s=0.3)
        src.start()
        try:
            assert src.request(1)
            silent = src.result(1, time.monotonic() + 3)
            clock.set(35.0)
            time.sleep(0.05)
            assert src.request(2)
            back = src.result(2, time.monotonic() + 3)
        finally:
            src.stop()
    assert silent is not None and silent[0] is None                    # missing, not zeros
    assert back is not None and back[0].sinr_db == 4.0 and back[0].pci == 295
    assert "RDY" in back[1]["urcs"] and back[1]["replies"]["qeng"].endswith("OK")   # boot URCs kept apart
    assert back[1]["provenance"] == {"read_from": "modem"} and "provenance" not in silent[1]


def test_torrent_workload_plumbing_with_recorded_webtorrent_output(tmp_path):
    """The real webtorrent is not installed here: the workload process is replaced by one printing the
    recorded leecher output line by line (its real exit: 0 after 'torrent downloaded successfully')."""
    spawned: list[object] = []
    w = S.WorkloadRunner({"kind": "torrent", "torrent": "x.torrent", "out": str(tmp_path)}, str(tmp_path / "w.log"),
                         on_spawn=lambda name, ident: spawned.append(ident))
    assert w.loop is not None and w.loop.argv[:2] == ["webtorrent", "download"]
    w.loop.argv = [sys.executable, "-c", "import sys, time\nfor l in open(sys.argv[1]):\n"
                   "    sys.stdout.write(l); sys.stdout.flush(); time.sleep(0.01)\n",
                   str(FIXTURES / "generated" / "webtorrent" / "leecher.stdout.txt")]
    w.start()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline and not w.finished:
        time.sleep(0.05)
    w.stop()
    assert w.finished and w.loop.exits == 1            # downloaded: not restarted
    took = w.take()
    assert took["dl_bps"] == 2.1e6 * 8 and took["peers_active"] == 1 and took["peers_connected"] == 1
    assert took["running"] is False
    assert spawned[0]["pid"] and spawned[-1] is None   # recorded at start, cleared at exit
    log = (tmp_path / "w.log").read_text()
    assert "torrent downloaded successfully" in log and "(exited with status 0)" in log


def test_iperf3_and_torrent_argv():
    a = S.iperf3_argv({"server": "10.0.0.1", "port": 5999, "rate": "1M"})
    assert a[:7] == ["iperf3", "-c", "10.0.0.1", "-p", "5999", "-R", "-t"] and a[-2:] == ["-b", "1M"]
    assert "--forceflush" in a and "--rcv-timeout" in a
    t = S.torrent_argv({"torrent": "magnet:?xt=urn:btih:a2465951e1295eb4ea1eae767e130f0446e03fb6", "out": "/d"})
    assert t[:3] == ["webtorrent", "download", "magnet:?xt=urn:btih:a2465951e1295eb4ea1eae767e130f0446e03fb6"]
    assert "--quiet" not in t and "-q" not in t       # the status frames are what is parsed
    assert json.dumps(S.ping_argv("10.0.0.1")) == json.dumps(["ping", "-n", "-D", "-O", "-i", "0.2", "-W", "1",
                                                             "10.0.0.1"])

