"""A parameter's bounds in its errors carry their unit (issue 26's rule: units in every printed value).

Bounds written as text keep their spelling (`10G`, `5s`); a bound written as a bare number is
printed in the parameter's unit (a duration's `86400` is `86400 s`), a count stays bare."""
from __future__ import annotations

import pytest

from controller import scenarios
from controller.errors import UsageError


@pytest.mark.parametrize("scenario, argv, message", [
    ("distinct-bottleneck", ["--duration", "100000s"], "--duration: 100000s is above the maximum 86400 s"),
    ("distinct-bottleneck", ["--duration", "0.5s"], "--duration: 0.5s is below the minimum 1 s"),
    ("mptcp-bittorrent", ["--timeout", "5s"], "--timeout: 5s is below the minimum 10 s"),
    ("mptcp-bittorrent", ["--duration", "2h"], "--duration: 2h is above the maximum 3600 s"),
    ("parallel-streams", ["--duration", "2s"], "--duration: 2s is below the minimum 3 s"),
    # as written: text bounds keep their unit, counts and ports have none
    ("distinct-bottleneck", ["--link2", "20G"], "--link2: 20G is above the maximum 10G"),
    ("distinct-bottleneck", ["--port-base", "80"], "--port-base: 80 is below the minimum 1024"),
    ("parallel-streams", ["--streams", "200"], "--streams: 200 is above the maximum 128"),
])
def test_a_bound_in_an_error_names_its_unit(scenario, argv, message):
    with pytest.raises(UsageError) as ei:
        scenarios.get(scenario).parse_args(argv)
    assert str(ei.value) == message
    assert ei.value.exit_code == 2
