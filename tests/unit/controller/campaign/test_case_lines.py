"""A case's error names the line of the value it is about (issue 26: every error with file:line).

A case refused by its scenario (`--rtt: unknown unit ...`) used to point at the `sweep:` key (or
the case as a whole) even when the bad value was a `fixed` parameter or one item of a sweep list.
Now the line is that value's: its sweep list item (or the key of a flow-style list), its `fixed`
key, its key in the `cases` entry; an error that names no parameter still points at the case.
A misspelt parameter gets the close one, as `ctl run` suggests a close option."""
from __future__ import annotations

from pathlib import Path

import pytest

from controller.campaign.plan import validate_cases
from controller.campaign.spec import CampaignFileError, load_campaign
from controller.inventory import load_inventory
from tests.support.shipped import VIRTUAL

SWEEP_BLOCK = """\
version: 1
name: lines
scenario: rtt-loss-sweep
fixed:
  duration: {duration}
  bw: 100M
sweep:
  rtt:
    - 20ms
    - {rtt}
  cc: [bbr3, {cc}]
repetitions: 1
"""

CASES = """\
version: 1
name: lines
scenario: rtt-loss-sweep
fixed:
  duration: 5s
cases:
  - {{rtt: 20ms, cc: cubic}}
  - rtt: 40ms
    cc: {cc}
repetitions: 1
"""


def refusal(tmp_path: Path, text: str) -> str:
    f = tmp_path / "c.yaml"
    f.write_text(text)
    spec, lines, _ = load_campaign(f)
    with pytest.raises(CampaignFileError) as ei:
        validate_cases(spec, f, lines, load_inventory(VIRTUAL))
    assert ei.value.exit_code == 2
    return str(ei.value).removeprefix(f"{f}:")


@pytest.mark.parametrize("values, line, says", [
    (dict(duration="0s", rtt="40ms", cc="cubic"), 5, "case 1 (rtt=20ms cc=bbr3): --duration: '0s' must be positive"),
    (dict(duration="5s", rtt="80 parsecs", cc="cubic"), 10, "case 3 (rtt=80 parsecs cc=bbr3): --rtt: unknown unit"),
    (dict(duration="5s", rtt="40ms", cc="'cu bic'"), 11, "case 2 (rtt=20ms cc=cu bic): --cc: 'cu bic' is not a valid"),
])
def test_a_sweep_case_names_the_line_of_its_bad_value(tmp_path, tmp_state_dir, values, line, says):
    assert refusal(tmp_path, SWEEP_BLOCK.format(**values)).startswith(f"{line}: {says}")


def test_a_listed_case_names_the_line_of_its_bad_value(tmp_path, tmp_state_dir):
    assert refusal(tmp_path, CASES.format(cc="'cu bic'")).startswith("9: case 2 (rtt=40ms cc=cu bic): --cc:")


@pytest.mark.parametrize("key, says", [
    ("rt", "sweep.rt: rtt-loss-sweep has no parameter 'rt' (did you mean rtt? known: bw, cc, "),
    ("zzz", "sweep.zzz: rtt-loss-sweep has no parameter 'zzz' (known: bw, cc, "),
])
def test_a_misspelt_parameter_gets_the_close_one(tmp_path, tmp_state_dir, key, says):
    text = SWEEP_BLOCK.format(duration="5s", rtt="40ms", cc="cubic").replace("  rtt:", f"  {key}:")
    assert refusal(tmp_path, text).startswith(f"8: {says}")
