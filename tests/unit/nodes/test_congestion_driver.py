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
                                             r"analysis: balia_floor cubic314 mcubic_nohs mcubic_stretch mcubic_wrap\)"):
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


# ---- what hostctl tells about a coupling map that was not empty at unload -------------------------

def _slot(**kw):
    return {"cwnd": 0, "rtt_us": 0, "aux": 0, "token": 0, "id": 0, **kw}


def test_hostctl_summarises_a_leftover_entry_from_bpftool_json():
    from nodes.congestion import hostctl
    # one element of `bpftool -j map dump` of a <short>_conns map (struct ctl_conn formatted from BTF)
    slots = [_slot() for _ in range(8)]
    slots[1] = _slot(cwnd=31, rtt_us=20417, token=0x5eed, id=2)
    slots[7] = _slot(cwnd=10, rtt_us=20790, token=0x5eed, id=0)        # written under subflow id 0
    elem = {"key": ["0x00"] * 8, "value": ["0x00"] * 200,
            "formatted": {"key": 0xFFFF8881234, "value": {"token": 0x5eed, "nactive": 1, "s": slots}}}
    assert hostctl.entry_summary(elem) == {
        "key": "0xffff8881234", "token": 0x5eed, "nactive": 1,
        "slots": [{"slot": 1, "cwnd": 31, "rtt_us": 20417, "aux": 0, "token": 0x5eed, "id": 2},
                  {"slot": 7, "cwnd": 10, "rtt_us": 20790, "aux": 0, "token": 0x5eed, "id": 0}]}
    assert hostctl.entry_summary({"key": ["0x00"], "value": ["0x00"]}) is None       # no BTF: not guessed
    assert hostctl.entry_summary("garbage") is None


def test_hostctl_counts_the_sockets_of_its_namespace_on_an_algorithm():
    from nodes.congestion import hostctl
    ss = ("ESTAB     0      0       10.1.1.1:5201  10.1.1.2:40000\n"
          "\t cubic wscale:7,7 rto:204 rtt:0.5/0.25 mss:1448 cwnd:10\n"
          "FIN-WAIT-1 0     4096    10.1.2.1:5201  10.1.2.2:40002\n"
          "\t balia_floor wscale:7,7 rto:220 rtt:20.1/5 mss:1448 cwnd:4 unacked:3\n"
          "ESTAB     0      0       10.1.1.1:5202  10.1.1.2:40004\n"
          "\t balia_floor wscale:7,7 rto:220 rtt:20.1/5 mss:1448 cwnd:40\n"
          "LISTEN    0      128     0.0.0.0:22     0.0.0.0:*\n")
    assert hostctl.sockets_on(ss, "balia_floor") == {"FIN-WAIT-1": 1, "ESTAB": 1}
    assert hostctl.sockets_on(ss, "balia") == {}
    assert hostctl.sockets_on("", "lia") == {}


def test_the_driver_keeps_what_hostctl_saw_of_a_phantom():
    from controller.commands import CommandResult
    d = CongestionDriver("sa2", HOLDER)
    leftovers = {"entries": [{"key": "0x1", "token": 7, "nactive": 1, "slots": []}], "sockets_here": {}}

    def res(args, doc):
        return CommandResult("sa2", ("python3", "-c", "SRC", *args), 0, json.dumps(doc) + "\n", "")
    results = [res(("unload", "lia", HOLDER), {"ok": True, "action": "unregistered", "name": "lia", "id": 9,
                                               "conns_left": 1, "leftovers": leftovers}),
               res(("unload", "olia", HOLDER), {"ok": True, "action": "unregistered", "name": "olia", "id": 8,
                                                "conns_left": 0})]
    assert d.conns_left(results) == {"lia": 1, "olia": 0}
    assert d.conns_leftovers(results) == {"lia": leftovers}


def test_hostctl_reads_the_tokens_of_live_mptcp_sockets():
    from nodes.congestion import hostctl
    ss = ("FIN-WAIT-2 121384 0      10.94.1.1:43508 10.94.1.2:5201\n"
          "\t subflows:1 add_addr_accepted:1 subflows_max:1 add_addr_accepted_max:1 remote_key token:ca031885 "
          "write_seq:98567e977fafaf8b snd_una:98567e977fafaf8b rcv_nxt:fccf2f0af93082dd\n"
          "ESTAB 0 0 10.94.1.1:49490 10.94.1.2:5201\n"
          "\t subflows_max:1 remote_key token:1ec7cc08 write_seq:d925526186dab65\n")
    assert hostctl.mptcp_tokens(ss) == {0xca031885, 0x1ec7cc08}
    assert hostctl.mptcp_tokens("LISTEN 0 128 0.0.0.0:5201 0.0.0.0:*\n\t subflows_max:2\n") == set()


def test_hostctl_finds_the_programs_count_of_linked_subflows():
    from nodes.congestion import hostctl
    bss = [{"key": ["0x00", "0x00", "0x00", "0x00"], "value": ["0x02", "0x00", "0x00", "0x00"],
            "formatted": {"value": {".bss": [{"ctl_linked": 2}]}}}]
    assert hostctl.find_var(bss, "ctl_linked") == 2
    assert hostctl.find_var([{"formatted": {"value": {".bss": []}}}], "ctl_linked") is None
    assert hostctl.find_var(None, "ctl_linked") is None
