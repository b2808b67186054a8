"""A claim is a function (issue 85): each paper's claims are built by one module-level function per
claim, of at most 40 lines, listed in its analysis module's CLAIMS, so that a claim's code can be named,
hashed and registered on its own."""

from __future__ import annotations

import inspect
import sys

import pytest

from replikit.papers import paper_names, registry
from replikit.plan.bill import load

MAX_LINES = 40


def _claim_functions(name: str) -> list:
    module = sys.modules[registry.get(name).claims.__module__]
    assert hasattr(module, "CLAIMS"), f"{module.__name__} lists no CLAIMS: one function per claim"
    return list(module.CLAIMS)


def test_every_claim_is_a_function_of_at_most_40_lines():
    lengths = {f"{f.__module__}.{f.__name__}": len(inspect.getsourcelines(f)[0])
               for name in paper_names() for f in _claim_functions(name)}
    longest = max(lengths, key=lengths.get)
    print(f"{len(lengths)} claim functions; the longest: {longest}, {lengths[longest]} lines")
    assert not {k: n for k, n in lengths.items() if n > MAX_LINES}


@pytest.mark.parametrize("name", paper_names())
def test_a_papers_claims_are_its_claim_functions_in_order(name):
    paper, cfg = registry.get(name), load([])[name]
    made = [c.id for c in paper.claims(paper.experiments(cfg), cfg)]
    assert [f.__name__ for f in _claim_functions(name)] == ["claim_" + cid.lower().replace("-", "")
                                                            for cid in made]
