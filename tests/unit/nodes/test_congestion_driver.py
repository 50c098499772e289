"""The congestion-control endpoint driver (pure: commands out, parsed state in), the per-subflow
check of what ran, and the build's command line. Probe outputs are what hostctl printed on
this project's virtual rack (kernel 6.18, as recorded in a run's commands.jsonl)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from controller.errors import ParameterError, ParseError
from controller.run.congestion import (congestion_problems, holder_id, state_identity, subflow_congestion,
                                      wanted_by_host)
from controller.telemetry.points import Point
from nodes.congestion.build import compile_argv
from nodes.congestion.driver import CongestionDriver, LoadObject, parse_probe
from nodes.mptcp import EndpointConfig

HOLDER = "run:20261124T155434Z_shared-bottleneck_delay-100ms_cc-lia"
PROBE = {"allowed": ["reno", "bbr"], "arch": "x86_64", "available": ["reno", "bbr", "cubic"],
         "boot_id": "e802c9e4-f573-40db-8f52-98e5a0b10c67", "bpftool": "/usr/sbin/bpftool", "btf": True,
         "holders": {}, "kernel": "6.18.44-fc-v669", "ok": True, "registered": {}}
LOADED = {**PROBE, "available": ["reno", "bbr", "cubic", "lia"], "registered": {"lia": 68},
          "holders": {"lia": {"added_allowed": False, "holders": [HOLDER], "id": 68, "object": "/x/lia.bpf.o",
                              "sha256": "0b2b" * 16}}}
OBJ = {"lia": LoadObject("lia", "0b2b" * 16, "/x/lia.bpf.o")}


def state(doc: dict):
    return parse_probe(json.dumps(doc) + "\n")


@pytest.fixture
def drv():
    return CongestionDriver("sa1", HOLDER, OBJ)


def test_probe_parses_and_refuses_garbage():
    st = state(PROBE)
    assert st.btf and st.available == ["reno", "bbr", "cubic"] and st.held_by(HOLDER) == []
    assert state(LOADED).held_by(HOLDER) == ["lia"]
    with pytest.raises(ParseError, match="not JSON"):
        parse_probe("Traceback (most recent call last):")
    with pytest.raises(ParseError, match="probe failed: refusing /run/ctl-cc"):
        parse_probe('{"ok": false, "error": "refusing /run/ctl-cc: not a directory"}')


def test_a_kernel_builtin_must_be_available_and_a_shipped_one_needs_bpf(drv):
    drv.check(frozenset({"cubic", "lia"}), state(PROBE))
    with pytest.raises(ParameterError, match=r"congestion control vegas not available \(this kernel offers: reno "
                                             r"bbr cubic; ctl can load: balia bbr3 lia mcubic olia wvegas; variants for "
                                             r"analysis: balia_floor mcubic_nohs mcubic_stretch mcubic_wrap\)"):
        drv.check(frozenset({"vegas"}), state(PROBE))
    for change, reason in (({"btf": False}, "the kernel has no BTF"),
                           ({"kernel": "5.15.0-91-generic"}, "kernel 5.15.0-91-generic is older than 6.6"),
                           ({"bpftool": None}, "bpftool is not installed")):
        with pytest.raises(ParameterError, match=f"sa1: congestion control lia is a BPF program ctl loads, but "
                                                 f".*{reason}"):
            drv.check(frozenset({"lia"}), state({**PROBE, **change}))


def test_plan_loads_what_this_run_does_not_hold_yet(drv):
    (load,) = drv.plan(frozenset({"lia", "cubic"}), state(PROBE))
    assert load.argv[:2] == ("python3", "-c") and load.argv[3:] == ("load", "lia", "0b2b" * 16, "/x/lia.bpf.o",
                                                                    HOLDER)
    assert load.mutates
    assert drv.plan(frozenset({"lia"}), state(LOADED)) == []


def test_verify_wants_the_run_among_the_holders_of_its_own_object(drv):
    assert drv.verify(frozenset({"lia", "cubic"}), state(LOADED)) == []
    assert drv.verify(frozenset({"lia"}), state(PROBE)) == ["congestion control lia not available after loading",
                                                            "lia: this run is not among its holders"]
    other = {**LOADED, "holders": {"lia": {**LOADED["holders"]["lia"], "sha256": "ffff" * 16}}}
    assert "is not this run's" in drv.verify(frozenset({"lia"}), state(other))[0]


def test_restore_leaves_what_it_holds_and_checks_nothing_stays(drv):
    (unload,) = drv.plan_restore(state(PROBE), state(LOADED))
    assert unload.argv[3:] == ("unload", "lia", HOLDER) and unload.mutates
    assert drv.plan_restore(state(PROBE), state(PROBE)) == []
    assert drv.restored_equal(state(PROBE), state(PROBE)) == []
    # a struct_ops map may linger after unregistering: only the kernel's list counts
    lingering = {**PROBE, "registered": {"lia": 68}}
    assert drv.restored_equal(state(PROBE), state(lingering)) == []
    assert drv.restored_equal(state(PROBE), state(LOADED)) == [
        "still holding lia", "lia is still a congestion control of the kernel"]
    shared = {**LOADED, "holders": {"lia": {**LOADED["holders"]["lia"], "holders": ["run:other"]}}}
    assert drv.restored_equal(state(PROBE), state(shared)) == []         # another run still uses it


def test_expected_state_for_a_dry_run(drv):
    st = drv.expected_state(state(PROBE), frozenset({"lia"}))
    assert "lia" in st.available and st.held_by(HOLDER) == ["lia"]


def test_wanted_by_host_from_the_plan():
    eps = {"a1": EndpointConfig(congestion_controls=frozenset({"lia", "cubic"})), "b1": EndpointConfig()}
    assert wanted_by_host(eps) == {"a1": frozenset({"lia", "cubic"})}


class _Flow:
    def __init__(self, name: str, cc: str | None):
        self.name, self.cc = name, cc


def _sub(flow: str, sub: str, cc: str, acked: int, token: str = "", t: int = 0) -> Point:
    return Point("subflow", {"host": "a1", "flow": flow, "subflow": sub, "link": "p1", "role": "client"},
                 {"cc": cc, "bytes_acked": acked, "mptcp_token": token}, t)


def test_only_data_subflows_carrying_data_are_checked():
    flows = [_Flow("mptcp", "lia")]
    points = [
        _sub("mptcp", "10.1.0.1:40000-10.1.0.2:5201", "bbr", 190, "aa"),          # iperf3's control connection
        _sub("mptcp", "10.1.0.1:40001-10.1.0.2:5201", "bbr", 1, "bb"),            # data, before iperf3 -C
        _sub("mptcp", "10.1.0.1:40001-10.1.0.2:5201", "lia", 5000, "bb", 1),
        _sub("mptcp", "10.2.0.1:41000-10.2.0.2:5201", "lia", 9000, "bb", 1),      # joined subflow, same token
    ]
    observed = subflow_congestion(points, flows, {"mptcp": {40001}})
    assert observed == {"mptcp": {"10.1.0.1:40001-10.1.0.2:5201": ["lia"], "10.2.0.1:41000-10.2.0.2:5201": ["lia"]}}
    assert congestion_problems(observed, flows) == []


def test_a_subflow_on_another_algorithm_is_named():
    flows = [_Flow("mptcp", "lia"), _Flow("tcp", "cubic")]
    points = [_sub("mptcp", "10.1.0.1:40001-10.1.0.2:5201", "cubic", 5000, "bb"),
              _sub("tcp", "10.1.0.3:40002-10.1.0.4:5202", "cubic", 5000)]
    observed = subflow_congestion(points, flows, {"mptcp": {40001}, "tcp": {40002}})
    assert congestion_problems(observed, flows) == [
        "flow mptcp subflow 10.1.0.1:40001-10.1.0.2:5201 used cubic, not lia"]
    assert congestion_problems({}, flows)[0] == "flow mptcp: no data subflow sample shows its congestion control"


def test_the_build_command_line():
    argv = compile_argv("/usr/bin/clang", Path("/src/lia.bpf.c"), Path("/out/lia.o"), Path("/inc"), "x86", True)
    assert argv[:5] == ["/usr/bin/clang", "-g", "-O2", "-target", "bpf"]
    assert "-mcpu=v3" in argv and "-D__TARGET_ARCH_x86" in argv and "-DCTL_TRACE" in argv
    assert argv[-4:] == ["-c", "/src/lia.bpf.c", "-o", "/out/lia.o"]


def test_holder_ids_are_unique_per_rack_state_dir_and_run(tmp_path):
    """Two racks on one kernel (or two state dirs) starting runs with the same run id hold a BPF
    program apart: neither can leave, or unload, the other's hold."""
    rid = "20261124T155434Z_shared-bottleneck_delay-100ms_cc-lia"
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    sa, sb = state_identity(tmp_path / "a"), state_identity(tmp_path / "b")
    assert sa != sb and len(sa) == 12 and state_identity(tmp_path / "a" / ".." / "a") == sa
    ids = {holder_id("virtual", sa, rid), holder_id("lab", sa, rid), holder_id("virtual", sb, rid),
           holder_id("virtual", sa, rid + "x")}
    assert len(ids) == 4
    assert holder_id("virtual", sa, rid) == f"run:virtual/{sa}/{rid}"
    assert holder_id("a b/../c", sa, rid).startswith("run:a_b_.._c/")        # one token, no separators


def test_the_record_says_which_bbr_the_kernel_is():
    """hostctl's probe reads /sys/module/tcp_bbr/version (Google's BBRv3 tree sets 3, upstream none):
    the run record labels the kernel's bbr with it, for the hosts whose connections use bbr."""
    from controller.run.congestion import kernel_bbr
    from nodes.congestion.driver import parse_probe
    up = parse_probe(json.dumps({"ok": True, "kernel": "6.18.44", "btf": True, "available": ["bbr"], "bbr_version": ""}))
    v3 = parse_probe(json.dumps({"ok": True, "kernel": "6.4.0+v3", "btf": True, "available": ["bbr"],
                                 "bbr_version": "3\n"}))
    odd = parse_probe(json.dumps({"ok": True, "kernel": "6.1", "available": [], "bbr_version": "3; rm -rf"}))
    assert (up.bbr_version, v3.bbr_version, odd.bbr_version) == ("", "3", "")
    wanted = {"a1": frozenset({"bbr"}), "a2": frozenset({"bbr"}), "b1": frozenset({"cubic"})}
    got = kernel_bbr(wanted, {"a1": up, "a2": v3, "b1": up})
    assert got == {"a1": {"version": None, "label": "bbr (kernel: v1 here)"},
                   "a2": {"version": "3", "label": "bbr (kernel: v3 here)"}}
    assert up.to_json()["bbr_version"] == ""
