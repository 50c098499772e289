"""The public corpus (tests/fixtures/corpus/index.json): every sample parsed through the same code
path as `ctl parse KIND FILE` (controller.parsers.parse_input), every listed value checked.

A sample that fails is a parser to fix for its class of input, never a sample to edit."""
from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import pytest

from controller.parsers import kinds, parse_input

CORPUS = Path(__file__).resolve().parents[1] / "fixtures" / "corpus"
INDEX = json.loads((CORPUS / "index.json").read_text())
SAMPLES = INDEX["samples"]


def _get(data: Any, path: str) -> Any:
    for part in path.split("."):
        if isinstance(data, list):
            data = data[int(part)]
        elif isinstance(data, dict):
            if part not in data:
                raise KeyError(f"{path}: no {part!r} in {sorted(data)}")
            data = data[part]
        else:
            raise KeyError(f"{path}: {part!r} under a {type(data).__name__}")
    return data


def _same(got: Any, want: Any) -> bool:
    if isinstance(want, float) and isinstance(got, (int, float)) and not isinstance(got, bool):
        return math.isclose(got, want, abs_tol=1e-6)
    return got == want


def test_corpus_is_large_and_varied():
    assert len(SAMPLES) >= 60
    assert len({s["file"] for s in SAMPLES}) == len(SAMPLES)
    assert all(s["source"] and s["expect"] for s in SAMPLES)
    assert {s["kind"] for s in SAMPLES} <= set(kinds())


@pytest.mark.parametrize("entry", SAMPLES, ids=[s["file"] for s in SAMPLES])
def test_sample(entry):
    result = parse_input(entry["kind"], str(CORPUS / entry["file"]))
    wrong = {}
    for path, want in entry["expect"].items():
        try:
            got = _get(result, path)
        except (KeyError, IndexError) as exc:
            wrong[path] = f"missing ({exc})"
            continue
        if not _same(got, want):
            wrong[path] = f"got {got!r}, want {want!r}"
    assert not wrong, f"{entry['file']} ({entry['source']}): {wrong}"
