"""A scenario's `reference` cites the section of the paper that describes its experiment (issue 26:
distinct-bottleneck cited the MCubic paper's section 4.1, which is the Linux implementation; its
experiment is 4.2.1, «분리된 병목 시나리오»).

The paper is read from its seed beside the checkout (../shared/seeds; skipped, saying why, in a
clone without the papers beside it, as tests/unit/controller/reproduce/test_hypotheses.py is): the cited section number must be a
heading there, and that heading must name the scenario's experiment.
"""
from __future__ import annotations

import re

import pytest

from controller import scenarios
from tests.support.shipped import paper_seeds

# scenario -> (the seed of its paper, the words of the heading of its experiment's section)
EXPERIMENT_HEADINGS = {
    "distinct-bottleneck": ("003_", "분리된 병목 시나리오"),      # MCubic paper, Fig. 2 and Table 1
    "shared-bottleneck": ("003_", "공유된 병목 시나리오"),        # MCubic paper, Fig. 4 and Tables 2, 3
}


def _headings(seed: str) -> dict[str, str]:
    found = paper_seeds(seed)
    return {m.group(1): m.group(2).strip() for m in re.finditer(r"^(\d+(?:\.\d+)+)\s+(.+)$", found[0].read_text(),
                                                                  re.M)}


@pytest.mark.parametrize("name", sorted(EXPERIMENT_HEADINGS))
def test_the_cited_section_is_the_experiments_own(name):
    seed, words = EXPERIMENT_HEADINGS[name]
    cited = re.findall(r"MCubic, section (\d+(?:\.\d+)+)", scenarios.get(name).reference)
    assert len(cited) == 1, scenarios.get(name).reference
    headings = _headings(seed)
    assert words in headings.get(cited[0], ""), (cited[0], headings)


def test_section_4_1_of_the_mcubic_paper_is_its_linux_implementation():
    """What the other `section 4.1` citations (nodes/congestion, the hypotheses) rely on."""
    assert "리눅스" in _headings("003_")["4.1"] and "구현" in _headings("003_")["4.1"]
