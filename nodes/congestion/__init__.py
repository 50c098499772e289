"""The papers' congestion controls on any upstream kernel: LIA, OLIA, BALIA, wVegas and MCubic
as BPF `struct_ops` programs, each coupling the subflows of one MPTCP connection.

`bpf/` holds the C sources (GPL-2.0, each citing its algorithm), `catalog` what ctl ships and
what each is, `model` the reference models the programs are tested against, `build` the
compilation against a kernel's BTF, `hostctl` the small standard-library program that loads,
shares and unloads them on a host, and `driver` the endpoint driver the runner uses.
"""
