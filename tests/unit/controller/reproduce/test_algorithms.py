"""What the rack can run (algorithms.assess, pure), from the probe a run's congestion stage uses."""
from __future__ import annotations

import json

from controller.inventory import Inventory
from controller.reproduce.algorithms import (
    AlgorithmStatus,
    assess,
    available_algorithms,
    endpoint_hosts,
    summary_line,
)
from nodes.congestion.catalog import ALGORITHMS
from nodes.congestion.driver import parse_probe


def probe(kernel="6.18.44", btf=True, bpftool="/usr/sbin/bpftool", available=("reno", "cubic", "bbr")):
    return parse_probe(json.dumps({"ok": True, "kernel": kernel, "arch": "x86_64", "boot_id": "", "btf": btf,
                                   "bpftool": bpftool, "available": list(available), "allowed": ["reno", "bbr"],
                                   "registered": {}, "holders": {}}))


def test_a_modern_kernel_runs_everything():
    st = assess({"a1": probe(), "b1": probe()}, None)
    assert {n for n, s in st.items() if s.runnable} == {"reno", "cubic", "bbr"} | set(ALGORITHMS)
    assert st["cubic"].kind == "kernel" and st["cubic"].reason == "built into the kernel (6.18.44)"
    assert st["mcubic"].kind == "bpf" and "mcubic.bpf.c" in st["mcubic"].reason


def test_a_ctl_algorithm_registered_by_another_run_stays_a_bpf_one():
    st = assess({"a1": probe(available=("reno", "cubic", "bbr", "lia"))}, None)
    assert st["lia"].kind == "bpf"


def test_why_bpf_cannot_run():
    st = assess({"a1": probe(kernel="6.1.0", btf=False), "b1": probe(bpftool=None)}, "clang is not installed")
    r = st["lia"].reason
    assert not st["lia"].runnable and r.startswith("ctl's BPF program cannot load: ")
    assert "a1: the kernel has no BTF" in r and "a1: kernel 6.1.0 is older than 6.6" in r
    assert "b1: bpftool is not installed" in r and "controller: clang is not installed" in r
    assert st["cubic"].runnable


def test_an_algorithm_missing_on_one_endpoint_is_not_runnable():
    st = assess({"a1": probe(available=("reno", "cubic", "bbr", "dctcp")), "b1": probe()}, None)
    assert not st["dctcp"].runnable and st["dctcp"].reason == "not in the kernel of b1"


def test_silent_endpoints():
    st = assess({"a1": "ssh: connection refused"}, None)
    assert not any(s.runnable for s in st.values())
    assert st["cubic"].reason == "not checked: no endpoint answered the probe; not asked: a1 (ssh: connection refused)"
    st2 = assess({"a1": probe(), "b1": "timeout"}, None)
    assert st2["cubic"].runnable and st2["cubic"].reason.endswith("; not asked: b1 (timeout)")


def test_the_seam_takes_a_probe_and_a_build_check(invs):
    inv: Inventory = invs["lab-rack"]
    seen = {}

    def fake_probe(i, hosts):
        seen["hosts"] = list(hosts)
        return {h: probe() for h in hosts}
    st = available_algorithms(inv, probe=fake_probe, build_check=lambda i: None)
    assert seen["hosts"] == endpoint_hosts(inv) and "a1" in seen["hosts"]
    assert summary_line(st).startswith("runnable: bbr (kernel: v1 here), cubic, reno, balia, bbr3, lia, mcubic, "
                                       "olia, wvegas")


def test_the_kernels_bbr_is_shown_with_the_bbr_it_is():
    """Where ctl shows the kernel's bbr to a reader (`ctl reproduce --dry-run`'s "runnable:" line,
    --json), it names the BBR: v1 on an upstream kernel, v3 where the kernel reports it."""
    st = assess({"a1": probe(), "b1": probe()}, None)
    assert st["bbr"].shown == "bbr (kernel: v1 here)" and st["bbr"].to_json()["label"] == "bbr (kernel: v1 here)"
    assert st["cubic"].shown == "cubic" and st["bbr3"].shown == "bbr3"
    v3 = {"ok": True, "kernel": "6.4.0+v3", "arch": "x86_64", "boot_id": "", "btf": True,
          "bpftool": "/usr/sbin/bpftool", "available": ["reno", "cubic", "bbr"], "allowed": [], "registered": {},
          "holders": {}, "bbr_version": "3"}
    st3 = assess({"a1": parse_probe(json.dumps(v3))}, None)
    assert summary_line(st3).startswith("runnable: bbr (kernel: v3 here), cubic, reno")
    assert assess({"a1": parse_probe(json.dumps(v3)), "b1": probe()}, None)["bbr"].shown == \
        "bbr (kernel: not the same BBR on every endpoint)"
    assert assess({"a1": "timeout"}, None)["bbr"].shown == "bbr (the kernel's; which BBR: not checked)"
    # a record written before the label existed still reads
    old = {"name": "bbr", "kind": "kernel", "runnable": True, "reason": "built into the kernel"}
    assert AlgorithmStatus.from_json(old).shown == "bbr" and AlgorithmStatus.from_json(st["bbr"].to_json()) == st["bbr"]
