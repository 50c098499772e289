"""One algorithm, one colour: a row labelled with what it is (`bbr (kernel: v1 here)`, `bbr3 (BBRv3
after draft-ietf-ccwg-bbr-06, BPF)`) has its algorithm's colour, never a spare one."""
from __future__ import annotations

import pytest

from controller.palette import algorithm_key, style


@pytest.mark.parametrize("label, key", [
    ("bbr (kernel: v1 here)", "bbr"), ("BBR (kernel)", "bbr"), ("bbr3 (BBRv3 after draft-ietf-ccwg-bbr-06, BPF)", "bbr3"),
    ("BBRv3", "bbr3"), ("MCubic", "mcubic"), ("BALIA floor", "balia_floor"), ("mcubic_wrap", "mcubic_wrap"),
])
def test_labelled_rows_keep_their_algorithm(label, key):
    assert algorithm_key(label) == key
    assert style(label) == style(key)


def test_a_caption_names_both_bbrs_for_what_they_are():
    from controller.palette import algorithm_note
    assert algorithm_note(["cubic", "lia"]) is None
    kernel = algorithm_note(["bbr (kernel: v1 here)", "cubic"])
    assert kernel == "BBR (kernel) is the endpoints' own kernel's BBR: upstream Linux ships BBRv1, not BBRv3"
    ours = algorithm_note(["bbr3"])
    assert ours.startswith("BBRv3 is ctl's bbr3") and "not Google's Linux BBRv3" in ours and "BBRv1" not in ours
    both = algorithm_note({"bbr", "bbr3 (BBRv3 after draft-ietf-ccwg-bbr-06, BPF)", "cubic"})
    assert both == f"{kernel}; {ours}"


def test_the_heatmap_caption_carries_the_note(tmp_path):
    from controller import plots
    from controller.results.figures import CaseData, heatmap_figures
    cases = [CaseData(i, {"loss": "0%", "rtt": "2ms", "cc": cc}, [], {"share_pct": [90.0, 91.0]}, [])
             for i, cc in enumerate(["bbr", "bbr3", "cubic"])]
    (_p, caption), = heatmap_figures(cases, "share_pct", ("loss", "rtt", "cc"), tmp_path, "t",
                                     output=plots.Output(("png",), 60))
    assert caption.endswith("not BBRv3; BBRv3 is ctl's bbr3, a BPF program after the IETF CCWG's BBR draft, "
                            "not Google's Linux BBRv3 (the draft's revision and how bbr3 differs from it: `ctl cc list`)")
