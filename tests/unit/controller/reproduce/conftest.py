"""Shared by the reproduction's unit tests: algorithm statuses as a rack would report them."""
from __future__ import annotations

import pytest

from controller.reproduce.algorithms import AlgorithmStatus


def statuses(runnable=("reno", "cubic", "bbr", "lia", "olia", "balia", "wvegas", "mcubic", "bbr3"), missing=()):
    out = {}
    for n in runnable:
        kind = "kernel" if n in ("reno", "cubic", "bbr") else "bpf"
        out[n] = AlgorithmStatus(n, kind, True, "built into the kernel" if kind == "kernel" else "ctl's BPF program")
    for n, why in missing:
        out[n] = AlgorithmStatus(n, "bpf", False, why)
    return out


@pytest.fixture
def all_runnable():
    return statuses()
