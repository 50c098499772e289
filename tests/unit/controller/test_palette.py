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
