"""Every claim quotes, word for word, the sentence of its paper that it tests (issue 21)."""

from __future__ import annotations

import re

import pytest

from replikit.core.config import load_config
from replikit.papers import registry
from replikit.scoring.quotes import QuoteError, quote_errors, quote_problem, source_text
from tests.conftest import ROOT
from tests.slurm_support import IN_CI

PAPERS_DIR = (ROOT.parent / "shared" / "papers").resolve()


def _squash(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


@pytest.mark.parametrize("name", sorted(registry.registry()))
@pytest.mark.parametrize("scale", ["smoke", "paper"])
def test_every_claim_quotes_a_sentence_of_its_paper(name, scale):
    """Against the source texts that ship with the project (sources/<paper>.txt), as the claims job
    checks them: no ../shared needed."""
    cfg = load_config(ROOT / f"config/{'config' if scale == 'default' else scale}.yaml",
                      ROOT / "workflow/schemas/config.schema.yaml")[name]
    spec = registry.get(name)
    claims = spec.claims(spec.experiments(cfg), cfg)
    assert quote_errors(claims, spec.source_files()) == []
    for claim in claims:
        assert ("abstract" in claim.source.where) == claim.source.abstract_only, claim.id
        assert claim.kind in ("paper", "hypothesis")
        assert claim.kind != "hypothesis" or claim.reading, claim.id
        assert not (claim.kind == "hypothesis" and claim.source.background), claim.id


@pytest.mark.skipif(not PAPERS_DIR.is_dir() and not IN_CI,
                    reason="the verified abstracts ../shared/papers are not here (CI must have them)")
@pytest.mark.parametrize("name", sorted(registry.registry()))
def test_the_shipped_source_texts_are_verbatim_copies_of_the_abstracts(name):
    """Each title line and abstract of sources/<paper>.txt stands word for word in ../shared/papers,
    under the arXiv id its header names."""
    shared = _squash(" ".join(f.read_text(encoding="utf-8", errors="replace")
                              for f in sorted(PAPERS_DIR.glob("*.txt"))))
    text = registry.get(name).source_files()[0].read_text()
    body = [line for line in text.splitlines() if line.strip() and not line.startswith("#")]
    assert body and all(_squash(line) in shared for line in body)
    assert re.findall(r"^## arXiv \S+ ", text, re.M)


def test_a_misquote_names_the_claim_and_marks_its_first_differing_word(tmp_path):
    source = tmp_path / "s.txt"
    source.write_text("# header\nWe find that shaped attention avoids rank collapse.\nAnother sentence.\n")
    assert quote_problem("We find that shaped attention avoids rank collapse.", source_text([source])) is None
    problem = quote_problem("We find that shaped attention causes rank collapse.", source_text([source]))
    assert '"We find that shaped attention >>causes<< rank collapse."' in problem
    assert 'the source reads there: "... avoids rank collapse.' in problem
    assert "not a whole sentence" in quote_problem("We find that shaped", source_text([source]))
    with pytest.raises(QuoteError, match="missing.txt does not exist; fix"):
        source_text([tmp_path / "missing.txt"])


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
