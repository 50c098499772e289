"""Every driver implements its whole contract: each method the Protocol declares exists on
the class with the same parameters (a new back-end that forgets a hook fails here, not in
the middle of a run)."""
from __future__ import annotations

import inspect

import pytest

from bridges.base import SHAPERS, Shaper
from nodes.base import EndpointDriver
from nodes.mptcp import MptcpEndpointDriver


def _protocol_methods(proto: type) -> dict[str, inspect.Signature]:
    out = {}
    for name, member in vars(proto).items():
        if name.startswith("_"):
            continue
        fn = member.__func__ if isinstance(member, classmethod) else member
        if inspect.isfunction(fn):
            out[name] = inspect.signature(fn)
    return out


def _check(cls: type, proto: type) -> list[str]:
    problems = []
    for name, sig in _protocol_methods(proto).items():
        impl = getattr(cls, name, None)
        if impl is None:
            problems.append(f"{cls.__name__} lacks {name}")
            continue
        want = [p for p in sig.parameters if p not in ("self", "cls")]
        got = [p for p in inspect.signature(impl).parameters if p not in ("self", "cls")]
        if want != got:
            problems.append(f"{cls.__name__}.{name}{tuple(got)} != {proto.__name__}.{name}{tuple(want)}")
    return problems


@pytest.mark.parametrize("kind", SHAPERS.names())
def test_every_shaper_implements_the_whole_protocol(kind):
    cls = SHAPERS.get(kind)
    assert cls.kind == kind
    assert _check(cls, Shaper) == []


def test_the_protocols_list_their_hooks():
    assert {"counter_streams", "counters_probe", "parse_counters", "expected_state", "verify_restore",
            "metadata_commands", "queue_limits"} <= set(_protocol_methods(Shaper))
    assert {"read_commands", "plan", "verify", "plan_restore", "restored_equal"} <= set(_protocol_methods(EndpointDriver))


def test_the_mptcp_endpoint_driver_implements_the_endpoint_contract():
    assert _check(MptcpEndpointDriver, EndpointDriver) == []
