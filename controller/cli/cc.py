"""`ctl cc list`: the congestion controls the rack's endpoints can run, and where each comes from.

A kernel built-in (`reno`, `cubic`, `bbr`, anything the endpoints' kernels list) is runnable
where every endpoint lists it; one of ctl's BPF programs (nodes/congestion) where every
endpoint's kernel can load it (BTF, struct_ops, bpftool) and the controller can build it. Variants
(another reading of a paper's algorithm, for analysis) are listed apart, each with its reading.
The probe is read-only: nothing on a host changes. A virtual rack's endpoints are namespaces
of this machine's kernel, so its probe runs here and the rack need not be up. Listing builds
nothing either: only the toolchain is checked, and a BPF program is compiled for an endpoint's
kernel when a run first needs it (then reused), which the list says.
"""
from __future__ import annotations

import argparse
import shutil
from pathlib import Path

from controller.cli.commands import JSON_HELP, Parser, add_command
from controller.cli.common import inventory_of, print_json
from nodes.congestion.catalog import ALGORITHMS, bbr_version_label, kernel_label
from nodes.congestion.driver import CongestionState


def cmd_cc(args: argparse.Namespace) -> int:
    from controller.reproduce import algorithms as algs  # SSH and the build: only when run

    inv = inventory_of(args)
    hosts = algs.endpoint_hosts(inv)
    states = algs.probe_local(hosts) if inv.kind == "virtual" else algs.probe_over_ssh(inv, hosts)
    statuses = algs.assess(states, toolchain_problem(inv))
    bbr_versions = sorted({s.bbr_version for s in states.values() if isinstance(s, CongestionState)})
    rows = []
    for name, st in sorted(statuses.items(), key=lambda kv: _order(kv[0], kv[1].kind)):
        alg = ALGORITHMS.get(name)
        rows.append({**st.to_json(),
                     "label": _label(name, bbr_versions),
                     "source": f"nodes/congestion/bpf/{alg.source}" if alg else "kernel",
                     "defines": list(alg.defines) if alg else [],
                     "title": alg.title if alg else None,
                     "reference": alg.reference if alg else None,
                     "specification": (alg.specification or None) if alg else None,
                     "differences": list(alg.differences) if alg else [],
                     "coupled": alg.coupled if alg else None,
                     "on_plain_tcp": alg.base if alg else None,
                     "variant_of": alg.variant_of if alg else None,
                     "for_analysis": bool(alg and alg.is_variant),
                     "reading": alg.reading if alg else None,
                     "built_on_first_use": alg is not None})
    if args.json:
        print_json({"rack": inv.name, "endpoints": hosts, "algorithms": rows})
        return 0
    print(f"congestion controls on rack {inv.name} (endpoints: {', '.join(hosts)})")
    w = max((len(r["label"]) for r in rows), default=4)
    for r in rows:
        if r["for_analysis"]:
            continue
        mark = "yes" if r["runnable"] else "no "
        print(f"  {r['label']:<{w}}  {mark}  {r['kind']:<6}  {r['reason']}")
        if r["specification"]:
            print(f"  {'':<{w}}       {r['title']}; source: {r['specification']}; differences from it on this kernel:")
            for d in r["differences"]:
                print(f"  {'':<{w}}         - {d}")
    variants = [r for r in rows if r["for_analysis"]]
    if variants:
        print("variants for analysis (another reading of a paper's algorithm, never used in its place):")
        for r in variants:
            mark = "yes" if r["runnable"] else "no "
            print(f"  {r['name']:<{w}}  {mark}  variant of {r['variant_of']}: {r['reading']}")
    print("ask for one with any scenario's --cc (or a campaign's `cc:` sweep); "
          "BPF programs are loaded for the run and removed after it")
    print("BPF programs build on first use: compiled for an endpoint's kernel when a run first needs them, then "
          "reused; this list built nothing")
    return 0


def _label(name: str, bbr_versions: list[str]) -> str:
    """A kernel's `bbr` with the BBR it is (v1 upstream; the endpoints' versions if they differ)."""
    if name != "bbr":
        return name
    if len(bbr_versions) > 1:
        return "bbr (kernel: " + " / ".join(bbr_version_label(v) for v in bbr_versions) + " on different endpoints)"
    return kernel_label("bbr", bbr_versions[0] if bbr_versions else None)


def toolchain_problem(_inv=None) -> str | None:
    """Why this controller could not build ctl's BPF programs (None: clang and bpftool are there).
    Builds nothing: a list or a dry run has no side effect; a run builds on first use."""
    missing = [t for t in ("clang", "bpftool") if shutil.which(t) is None and not Path("/usr/sbin", t).exists()]
    return f"{', '.join(missing)} not installed (scripts/setup.sh installs them)" if missing else None


def _order(name: str, kind: str) -> tuple[int, str]:
    """Kernel built-ins, then the papers' algorithms, then the variants for analysis."""
    alg = ALGORITHMS.get(name)
    return (0 if kind == "kernel" else 2 if alg is not None and alg.is_variant else 1, name)


def register(sub) -> None:
    p = add_command(sub, "cc", allow_abbrev=False,
                    description="Congestion controls the rack's endpoints can run (kernel built-ins and "
                                "ctl's BPF programs), with the reason for those they cannot.")
    ls = p.add_subparsers(dest="cc_command", required=True, parser_class=Parser, metavar="ACTION")
    sp = ls.add_parser("list", help="every algorithm, runnable or not, and where it comes from (builds nothing)",
                       allow_abbrev=False)
    sp.add_argument("--json", action="store_true",
                    help=JSON_HELP + "; per algorithm: kind, runnable and why, label, source, defines, specification "
                                     "and differences, variant_of and reading")
    sp.set_defaults(func=cmd_cc)
