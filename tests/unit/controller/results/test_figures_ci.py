"""No 95 % confidence interval from one repetition: the box plot draws the mean alone (no
zero-width error bar) for such a case and says so in its caption; the report's table gives
the mean with "n = 1, no CI"."""
from __future__ import annotations

from controller import plots
from controller.results.figures import CaseData, box_figure, draw_boxes


def case(index: int, values: list[float]) -> CaseData:
    return CaseData(index, {"link2": f"{10 * (index + 1)}M"}, [], {"jain_index": values}, [])


def test_error_bars_only_where_there_are_two_repetitions_or_more():
    plt = plots.pyplot()
    fig, ax = plt.subplots()
    data = [(case(0, [0.7]), [0.7]), (case(1, [0.7, 0.8, 0.75]), [0.7, 0.8, 0.75]), (case(2, [0.9]), [0.9])]
    assert draw_boxes(ax, data) == 2
    bars = [c for c in ax.containers if type(c).__name__ == "ErrorbarContainer"]
    assert len(bars) == 1                                  # case 2 only
    labels = [h.get_label() for h in ax.get_legend_handles_labels()[0]]
    assert sorted(labels) == ["mean (n = 1: no CI)", "mean, 95% CI"]   # each once
    plt.close(fig)


def test_caption_says_which_cases_have_no_ci(tmp_path):
    (path, caption), = box_figure([case(0, [0.7]), case(1, [0.7, 0.8])], "jain_index", tmp_path, "t")
    assert path.exists() and caption.endswith("1 case with one repetition: mean only, no CI)")
    (_p, caption), = box_figure([case(1, [0.7, 0.8])], "jain_index", tmp_path, "t")
    assert "no CI" not in caption


def test_no_box_from_one_repetition():
    plt = plots.pyplot()
    fig, ax = plt.subplots()
    data = [(case(0, [0.7]), [0.7]), (case(1, [0.7, 0.8, 0.75]), [0.7, 0.8, 0.75])]
    draw_boxes(ax, data)
    boxes = [ln for ln in ax.get_lines() if ln.get_label().startswith("_child") and len(ln.get_xdata()) == 5]
    assert len(boxes) == 1 and {round(y) for y in boxes[0].get_ydata()} == {2}     # the second case's only
    plt.close(fig)
