"""`ctl reproduce --dry-run`'s rack-time footnote: each scenario once, learned or declared.

It listed every campaign of a learned scenario (`distinct-bottleneck 3 s learned from 33 runs`
three times for --deviations) and said nothing of the scenarios whose campaign files' own
`overhead` was used."""
from __future__ import annotations

from controller.reproduce.design import design, parse_papers
from controller.reproduce.queue import overhead_note, plan_file, prepare


def _planned(invs, all_runnable, tmp_path, samples):
    d = design("deviations", parse_papers("mcubic"), all_runnable)
    first = prepare(d, invs["virtual"], tmp_path / "campaigns")
    return [plan_file(p.design, p.path, invs["virtual"], samples) for p in first]


def test_each_scenario_once_with_where_its_overhead_came_from(invs, all_runnable, tmp_state_dir, tmp_path):
    planned = _planned(invs, all_runnable, tmp_path, {"shared-bottleneck": [2.0, 3.0, 4.0, 3.0]})
    assert {p.spec.scenario for p in planned} == {"shared-bottleneck", "distinct-bottleneck"}
    assert sum(p.spec.scenario == "shared-bottleneck" for p in planned) > 1    # what made the repeats
    declared = {p.overhead_s for p in planned if p.spec.scenario == "distinct-bottleneck"}
    assert overhead_note(planned) == (
        "shared-bottleneck 3 s, learned from 4 runs; the campaign files' `overhead`: distinct-bottleneck "
        + "/".join(f"{v:.0f}" for v in sorted(declared)) + " s")


def test_too_few_samples_are_not_called_learned(invs, all_runnable, tmp_state_dir, tmp_path):
    planned = _planned(invs, all_runnable, tmp_path, {"distinct-bottleneck": [3.0, 3.0]})
    note = overhead_note(planned)
    assert "learned" not in note
    assert note.startswith("the campaign files' `overhead`: ")
    assert note.count("shared-bottleneck") == 1 and note.count("distinct-bottleneck") == 1
