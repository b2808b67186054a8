"""Every claim quotes, word for word, the sentence of its paper that it tests (issue 21)."""

from __future__ import annotations

import re

import pytest

from replikit.core.config import load_config
from replikit.papers import registry
from tests.conftest import ROOT

PAPERS_DIR = (ROOT.parent / "shared" / "papers").resolve()


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


@pytest.fixture(scope="module")
def abstracts() -> str:
    files = sorted(PAPERS_DIR.glob("*.txt"))
    assert files, f"the papers' abstracts are expected in {PAPERS_DIR}"
    return _squash(" ".join(f.read_text(encoding="utf-8", errors="replace") for f in files))


@pytest.mark.parametrize("name", sorted(registry.registry()))
@pytest.mark.parametrize("scale", ["smoke", "paper"])
def test_every_claim_quotes_a_sentence_of_its_paper(abstracts, name, scale):
    cfg = load_config(ROOT / f"config/{'config' if scale == 'default' else scale}.yaml",
                      ROOT / "workflow/schemas/config.schema.yaml")[name]
    spec = registry.get(name)
    for claim in spec.claims(spec.experiments(cfg), cfg):
        quote = _squash(claim.source.quote)
        assert quote in abstracts, f"{claim.id}: quote not found verbatim in ../shared/papers: {quote[:80]}"
        assert quote.endswith((".", "!", "?")), f"{claim.id}: quote a whole sentence"
        assert ("abstract" in claim.source.where) == claim.source.abstract_only, claim.id
        assert claim.kind in ("paper", "hypothesis")
        assert claim.kind != "hypothesis" or claim.reading, claim.id
        assert not (claim.kind == "hypothesis" and claim.source.background), claim.id


def test_the_corrected_directions_are_declared():
    """CPE-7 tests the prior, as its sentence says; RC-4's d_k direction is ours."""
    cfg = load_config(ROOT / "config/smoke.yaml", ROOT / "workflow/schemas/config.schema.yaml")

    def claims(name: str) -> dict:
        spec = registry.get(name)
        return {c.id: c for c in spec.claims(spec.experiments(cfg[name]), cfg[name])}

    cpe7 = claims("cold_posterior")["CPE-7"]
    assert "linking the CPE to the prior" in cpe7.source.quote and "prior" in cpe7.statement.split(":")[0]
    assert claims("rank_collapse")["RC-4"].kind == "hypothesis"



def test_sentences_of_earlier_work_or_definitions_are_background_and_cpe4_says_what_is_ours():
    """RC-1, DT-4, CPE-1 and CPE-2 quote sentences that report earlier work or define the effect:
    they are marked background (counted apart in the report); CPE-4's prior-only tempering is our
    operationalization, and its row says so."""
    cfg = load_config(ROOT / "config/smoke.yaml", ROOT / "workflow/schemas/config.schema.yaml")
    rows = {}
    for name in ("cold_posterior", "rank_collapse", "depthwise_transfer"):
        spec = registry.get(name)
        rows |= {c.id: c for c in spec.claims(spec.experiments(cfg[name]), cfg[name])}
    background = {i for i, c in rows.items() if c.source.background}
    assert background == {"RC-1", "DT-4", "CPE-1", "CPE-2"}
    assert "our operationalization" in rows["CPE-4"].reading and rows["CPE-4"].kind == "paper"
