"""One name for the loss rate where a person reads it (issue 26: "one name per concept across commands"):
`--loss` in every command and scenario, so "loss" with its unit (%) in the progress lines of a run (a
pipe's describe()), `ctl link show`'s table, `ctl link reset`'s lines, verification differences and
refusals. `plr` stays where it is not ctl's word for people: the key in records and --json (a format),
the inventory's `baseline: {plr: ...}` as the user wrote it, and dummynet's own command lines and
listings (the shaper's syntax), which the differences quote next to the value in %."""
from __future__ import annotations

import re

import pytest

from bridges.base import Capabilities, Direction, PipeConfig, check_capabilities, diff_pipe
from controller.errors import ParameterError, UnsupportedShaping
from controller.rack.links import render_reset, render_show
from controller.units import Queue

PIPE = PipeConfig(bw_bps=20_000_000, delay_us=25_000, plr=0.0001, queue=Queue(slots=50))
PLR = re.compile(r"\bplr\b")


def test_a_pipe_as_a_progress_line_shows():
    assert PIPE.describe() == "bw 20 Mbit/s, delay 25ms, loss 0.01%, queue 50 slots"


def test_link_show_and_reset_say_loss():
    shown = render_show({"path1": {"bridge": "br1", "kind": "dnpipe", "directions": {
        "forward": {"shaped": True, "config": PIPE.to_json(), "counters": {"tx_pkts": 10, "drop_plr_pkts": 1}},
        "reverse": {"shaped": False, "config": PipeConfig().to_json(), "counters": {}}}}})
    header, fwd, _rev = shown.splitlines()
    assert header.split()[:7] == ["link", "dir", "bridge", "kind", "bw", "delay", "loss"]
    assert "0.01%" in fwd.split() and not PLR.search(shown)
    reset = render_reset([{"bridge": "br1", "after": {"path1.forward": PipeConfig().to_json()},
                           "before": {"path1.forward": PIPE.to_json()}}])
    assert "(was bw 20 Mbit/s, delay 25ms, loss 0.01%, queue 50 slots)" in reset and not PLR.search(reset)


def test_differences_and_refusals_say_loss():
    diffs = diff_pipe(PIPE, PipeConfig(bw_bps=20_000_000, delay_us=25_000, plr=0.001, queue=Queue(slots=50)),
                      label="br1 path1 forward")
    assert diffs == ["br1 path1 forward: loss expected 0.01%, found 0.1%"]
    with pytest.raises(UnsupportedShaping, match=r"loss 0\.01% requested but the tc back-end") as ei:
        check_capabilities("tc", Capabilities(delay=True), "br1", {("path1", Direction.FORWARD): PIPE})
    assert not PLR.search(str(ei.value))
    with pytest.raises(ParameterError, match=r"^loss: 2\.0 is outside 0\.\.1 \(0 %\.\.100 %\)$"):
        PipeConfig(plr=2.0)
    with pytest.raises(ParameterError, match=r"^loss: "):
        PipeConfig.from_args(plr="150%")
