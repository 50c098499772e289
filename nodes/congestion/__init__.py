"""Congestion controls as BPF `struct_ops` programs for any upstream kernel: the MPTCP papers'
coupled algorithms (LIA, OLIA, BALIA, wVegas, MCubic, each coupling the subflows of one MPTCP
connection) and bbr3, BBRv3 written from the IETF CCWG draft (one flow at a time).

`bpf/` holds the C sources (GPL-2.0, each citing its algorithm), `catalog` what ctl ships and
what each is, `model` (and `model_bbr3`, `trace_bbr3`) the reference models the programs are
tested against, `build` the compilation against a kernel's BTF, `hostctl` the small
standard-library program that loads, shares and unloads them on a host, and `driver` the
endpoint driver the runner uses.
"""
