"""`ctl cc list`: the congestion controls the rack's endpoints can run, and where each comes from.

A kernel built-in (`reno`, `cubic`, `bbr`, anything the endpoints' kernels list) is runnable
where every endpoint lists it; one of ctl's BPF programs (nodes/congestion) where every
endpoint's kernel can load it (BTF, struct_ops, bpftool) and the controller can build it. Variants
(another reading of a paper's algorithm, for analysis) are listed apart, each with its reading.
The probe is read-only: nothing on a host changes. A virtual rack's endpoints are namespaces
of this machine's kernel, so its probe runs here and the rack need not be up.
"""
from __future__ import annotations

import argparse

from controller.cli.commands import Parser, add_command
from controller.cli.common import inventory_of, print_json
from nodes.congestion.catalog import ALGORITHMS


def cmd_cc(args: argparse.Namespace) -> int:
    from controller.reproduce import algorithms as algs  # SSH and the build: only when run

    inv = inventory_of(args)
    probe = (lambda i, hosts: algs.probe_local(hosts)) if inv.kind == "virtual" else None
    statuses = algs.available_algorithms(inv, probe=probe)
    rows = []
    for name, st in sorted(statuses.items(), key=lambda kv: _order(kv[0], kv[1].kind)):
        alg = ALGORITHMS.get(name)
        rows.append({**st.to_json(),
                     "source": f"nodes/congestion/bpf/{alg.source}" if alg else "kernel",
                     "defines": list(alg.defines) if alg else [],
                     "title": alg.title if alg else None,
                     "reference": alg.reference if alg else None,
                     "on_plain_tcp": alg.base if alg else None,
                     "variant_of": alg.variant_of if alg else None,
                     "for_analysis": bool(alg and alg.is_variant),
                     "reading": alg.reading if alg else None})
    if args.json:
        print_json({"rack": inv.name, "endpoints": algs.endpoint_hosts(inv), "algorithms": rows})
        return 0
    print(f"congestion controls on rack {inv.name} (endpoints: {', '.join(algs.endpoint_hosts(inv))})")
    w = max((len(r["name"]) for r in rows), default=4)
    for r in rows:
        if r["for_analysis"]:
            continue
        mark = "yes" if r["runnable"] else "no "
        print(f"  {r['name']:<{w}}  {mark}  {r['kind']:<6}  {r['reason']}")
    variants = [r for r in rows if r["for_analysis"]]
    if variants:
        print("variants for analysis (another reading of a paper's algorithm, never used in its place):")
        for r in variants:
            mark = "yes" if r["runnable"] else "no "
            print(f"  {r['name']:<{w}}  {mark}  variant of {r['variant_of']}: {r['reading']}")
    print("ask for one with any scenario's --cc (or a campaign's `cc:` sweep); "
          "BPF programs are loaded for the run and removed after it")
    return 0


def _order(name: str, kind: str) -> tuple[int, str]:
    """Kernel built-ins, then the papers' algorithms, then the variants for analysis."""
    alg = ALGORITHMS.get(name)
    return (0 if kind == "kernel" else 2 if alg is not None and alg.is_variant else 1, name)


def register(sub) -> None:
    p = add_command(sub, "cc", allow_abbrev=False,
                    description="Congestion controls the rack's endpoints can run (kernel built-ins and "
                                "ctl's BPF programs), with the reason for those they cannot.")
    ls = p.add_subparsers(dest="cc_command", required=True, parser_class=Parser, metavar="ACTION")
    sp = ls.add_parser("list", help="every algorithm, runnable or not, and where it comes from",
                       allow_abbrev=False)
    sp.add_argument("--inventory", "-i", default=argparse.SUPPRESS, help="rack description (YAML)")
    sp.add_argument("--json", action="store_true")
    sp.set_defaults(func=cmd_cc)
