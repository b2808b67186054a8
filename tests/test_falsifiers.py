"""Every replication can fail (issue 63): each paper claim names a falsifier, the same statistic where
the effect should vanish, or says why it holds by construction (a check); the rows count apart."""

from __future__ import annotations

import dataclasses

import pytest

from replikit.core.config import load_config
from replikit.papers import registry
from replikit.reporting.report import row_kind, verdict_counts
from replikit.scoring.claims import Claim, Falsifier, Part, Source, evaluate, falsifier_text, standing
from replikit.scoring.scorecard_reference import compare, summarize
from tests.conftest import ROOT

SRC = Source("A sentence of the paper.", "a paper, abstract")
EFFECT = {0: 0.2, 1: 0.3, 2: 0.25, 3: 0.22, 4: 0.28}  # clearly above 0
NONE = {0: -0.2, 1: -0.3, 2: -0.25, 3: -0.22, 4: -0.28}  # clearly below 0



def _claim(own: dict, falsified: dict | None = None, check: str = "") -> Claim:
    falsifier = None if falsified is None else Falsifier(
        "no effect", "the theory says it vanishes", lambda r: [Part("x", falsified, 0.0)])
    return Claim("X-1", "s", "v", "ps", "stat", "rule", lambda r: [Part("x", own, 0.0)], source=SRC,
                 falsifier=falsifier, check=check)


@pytest.mark.parametrize("own, falsified, want", [
    (EFFECT, NONE, "replication"),
    (EFFECT, EFFECT, "cannot discriminate"),
    (NONE, EFFECT, "replication"),  # not replicated here: the falsifier does not rescue it
    (EFFECT, None, "falsifier not measured"),
])
def test_a_row_stands_by_its_own_verdict_and_its_falsifiers(own, falsified, want):
    (row,) = evaluate([_claim(own, falsified)], {})
    assert row["standing"] == want == standing(row)
    if falsified is not None:
        assert row["falsifier"]["verdict"] == ("replicated" if falsified is EFFECT else "not replicated")
        assert "under its falsifier (no effect)" in falsifier_text(row)


def test_a_check_holds_by_construction_and_has_no_falsifier():
    (row,) = evaluate([_claim(EFFECT, check="softmax averages, shaped attention starts at identity")], {})
    assert row["standing"] == "check" and row["falsifier"] is None
    with pytest.raises(ValueError, match="one or the other"):
        _claim(EFFECT, NONE, check="both")


def test_a_falsifier_is_inconclusive_at_the_preflight_and_unmeasured_with_its_claim():
    (row,) = evaluate([_claim(EFFECT, NONE)], {}, preflight=True)
    assert row["falsifier"]["verdict"] == "inconclusive"
    claim = _claim(EFFECT, NONE)
    unmeasurable = dataclasses.replace(claim, not_measurable=lambda cfg: "not run here")
    (row,) = evaluate([unmeasurable], {})
    assert row["falsifier"]["verdict"] == "not measured" and row["standing"] == "replication"


def test_a_falsifier_whose_runs_are_not_trained_reads_not_measured_and_the_row_is_not_counted():
    """A falsifier switched off in a configuration (a ladder's rung) reads "not measured", with the
    reason, and is never read; a replicated claim then counts apart from the replications."""
    claim = _claim(EFFECT, NONE)
    off = dataclasses.replace(claim.falsifier, measure=lambda r: r["missing"],  # raises if it is read
                              not_measurable=lambda cfg: "" if cfg.get("on") else "not trained here")
    (row,) = evaluate([dataclasses.replace(claim, falsifier=off)], {}, cfg={})
    assert row["verdict"] == "replicated" and row["falsifier"]["verdict"] == "not measured"
    assert row["falsifier"]["note"] == "not measurable in this configuration: not trained here"
    assert row["standing"] == "falsifier not measured" == row_kind(row)
    assert "not measured (not measurable in this configuration: not trained here) under" in \
        falsifier_text(row)
    on = dataclasses.replace(off, measure=claim.falsifier.measure)
    (row,) = evaluate([dataclasses.replace(claim, falsifier=on)], {}, cfg={"on": True})
    assert row["standing"] == "replication" and "note" not in row["falsifier"]


def test_the_reference_guards_the_falsifiers_verdict():
    rows = evaluate([_claim(EFFECT, NONE)], {})
    card = {"paper": "p", "scale": "smoke", "claims": rows}
    ref = summarize([card])
    flipped = evaluate([_claim(EFFECT, EFFECT)], {})
    diff = compare(ref, summarize([{**card, "claims": flipped}]))
    assert any("X-1 falsifier: verdict 'not replicated' -> 'replicated'" in line for line in diff), diff
    old = {**ref, "papers": {"p": {"X-1": {k: v for k, v in ref["papers"]["p"]["X-1"].items()
                                           if k != "falsifier"}}}}
    assert any("write the reference again" in line for line in compare(old, ref))


def test_the_report_counts_checks_and_rows_that_cannot_discriminate_apart():
    rows = [evaluate([c], {})[0] for c in (_claim(EFFECT, NONE), _claim(EFFECT, EFFECT),
                                           _claim(EFFECT, check="by construction"))]
    assert [row_kind(r) for r in rows] == ["paper", "cannot discriminate", "check"]
    lines = verdict_counts([{"scale": "smoke", "claims": rows}])
    own = "smoke: 1 paper claims with a falsifier (replications):"
    assert any(line.startswith(own) for line in lines), lines
    assert any("1 paper claims that cannot discriminate" in line for line in lines), lines
    assert any("1 checks" in line for line in lines), lines


def _paper_claims(scale_file: str) -> dict[str, Claim]:
    cfg = load_config(ROOT / "config" / scale_file, ROOT / "workflow/schemas/config.schema.yaml")
    out = {}
    for name in registry.registry():
        paper = registry.get(name)
        for c in paper.claims(paper.experiments(cfg[name]), cfg[name]):
            if c.kind == "paper":
                out[f"{name}/{c.id}"] = c
    return out


@pytest.mark.parametrize("scale_file", ["smoke.yaml", "config.yaml"])
def test_every_paper_claim_names_a_falsifier_or_is_a_check(scale_file):
    claims = _paper_claims(scale_file)
    neither = sorted(k for k, c in claims.items() if c.falsifier is None and not c.check)
    assert neither == [], (
        "a paper claim needs a falsifier (Claim(falsifier=Falsifier(...)): the same statistic where the "
        f"effect should vanish) or, if it holds by construction, check='why'; neither: {neither}")
    for key, c in claims.items():
        if c.falsifier is not None:
            assert c.falsifier.setting.strip() and c.falsifier.why.strip(), key


def test_a_falsifier_that_yields_no_value_in_any_seed_tests_nothing():
    """A falsifier that ran but whose every part has no value (an optimum at the end of its grid in every
    seed) cannot read "not replicated": it reads inconclusive, and the replicated claim counts apart."""
    empty = Falsifier(setting="no effect", why="the theory says it vanishes",
                      measure=lambda r: [Part("x", {}, 0.0, no_evidence="optimum at the grid's end")])
    (row,) = evaluate([dataclasses.replace(_claim(EFFECT, NONE), falsifier=empty)], {})
    assert row["verdict"] == "replicated" and row["falsifier"]["verdict"] == "inconclusive"
    assert row["standing"] == "falsifier not measured"
    # the published snapshot counts it the same way, from the summarized row
    from replikit.tools.publish import _kind

    assert _kind(summarize([{"paper": "p", "scale": "smoke", "claims": [row]}])["papers"]["p"]["X-1"],
                 "paper") == "falsifier not measured"


@pytest.mark.parametrize("values, why", [
    ({s: 0.0 for s in range(5)}, "every seed gives exactly the threshold 0"),  # two arms that coincide
    ({s: 0.1 * s for s in range(5)}, "both arms at a floor"),  # values, but the part says it has no evidence
])
def test_a_falsifier_whose_parts_carry_no_evidence_tests_nothing(values, why):
    """A falsifier whose arms coincide gives exactly its threshold in every seed, so it can read neither
    side; a part with values that says it carries no evidence cannot either. Both count the replicated
    claim apart, in the row and in the published snapshot; a falsifier with one part that carries
    evidence is measured."""
    no_evidence = "" if "exactly" in why else why
    dead = Falsifier("no effect", "the theory says it vanishes",
                     lambda r: [Part("x", values, 0.0, no_evidence=no_evidence)])
    (row,) = evaluate([dataclasses.replace(_claim(EFFECT, NONE), falsifier=dead)], {})
    assert row["verdict"] == "replicated" and row["falsifier"]["verdict"] == "inconclusive"
    assert why in row["falsifier"]["parts"][0]["no_evidence"]
    assert row["standing"] == "falsifier not measured"
    assert f"inconclusive ({why}" in falsifier_text(row)  # the row says why its falsifier tests nothing
    from replikit.tools.publish import _kind

    summary = summarize([{"paper": "p", "scale": "smoke", "claims": [row]}])
    assert summary["papers"]["p"]["X-1"]["falsifier"]["parts"]["x"]["no_evidence"] is True
    assert _kind(summary["papers"]["p"]["X-1"], "paper") == "falsifier not measured"
    live = Falsifier("no effect", "the theory says it vanishes",
                     lambda r: [Part("x", values, 0.0, no_evidence=no_evidence), Part("y", NONE, 0.0)])
    (row,) = evaluate([dataclasses.replace(_claim(EFFECT, NONE), falsifier=live)], {})
    assert row["standing"] == "replication" and row["falsifier"]["verdict"] == "not replicated"


def test_a_part_at_its_threshold_in_every_seed_carries_no_evidence_and_the_reference_guards_it():
    """Equal seeds away from the threshold still carry evidence (the sign-flip test judges them);
    equal seeds at it carry none, and a reference row that gained or lost its evidence is a difference."""
    at = Part("x", {s: 0.0 for s in range(5)}, 0.0).decide(0.9, 5)
    away = Part("x", {s: 0.3 for s in range(5)}, 0.0).decide(0.9, 5)
    assert at.no_evidence and at.verdict == "inconclusive"
    assert not away.no_evidence and away.all_equal and away.verdict == "replicated"
    rows = evaluate([_claim(EFFECT, {s: 0.0 for s in range(5)})], {})
    ref = summarize([{"paper": "p", "scale": "smoke", "claims": rows}])
    now = summarize([{"paper": "p", "scale": "smoke", "claims": evaluate([_claim(EFFECT, {
        s: 0.0 if s else 0.001 for s in range(5)})], {})}])
    assert "p X-1 falsifier [x]: now carries evidence" in compare(ref, now)


def test_a_falsifier_part_without_evidence_does_not_hide_one_that_reads_replicated():
    """The falsifier's verdict combines only the parts that carry evidence: one that reads the effect where
    it should vanish makes a replicated row "cannot discriminate", whatever a no-evidence part beside it
    reads."""
    mixed = Falsifier("no effect", "the theory says it vanishes",
                      lambda r: [Part("x", EFFECT, 0.0), Part("y", {s: 0.0 for s in range(5)}, 0.0)])
    (row,) = evaluate([dataclasses.replace(_claim(EFFECT, NONE), falsifier=mixed)], {})
    assert row["falsifier"]["verdict"] == "replicated" and row["standing"] == "cannot discriminate"


def test_a_falsifier_whose_margin_its_own_pilot_sized_counts_the_row_apart():
    """A margin sized from the pilot's mean of the statistic the falsifier reads (half of NTK's spread,
    judging NTK's spread) makes the falsifier's "not replicated" expected: the row counts apart, in the
    scorecard, the report and a published snapshot, unless its falsifier reads replicated too."""
    from replikit.scoring.claims import SIZED_BY_PILOT
    from replikit.tools.publish import _kind, declared_kind

    claim = _claim(EFFECT, NONE)
    sized = dataclasses.replace(claim, falsifier=dataclasses.replace(
        claim.falsifier, sized_by_pilot="the margin is half of the pilot's mean of this statistic"))
    (row,) = evaluate([sized], {})
    assert row["verdict"] == "replicated" and row["falsifier"]["verdict"] == "not replicated"
    assert row["standing"] == SIZED_BY_PILOT == row_kind(row)
    assert row["falsifier"]["sized_by_pilot"].startswith("the margin is half")
    assert declared_kind(sized) == SIZED_BY_PILOT and declared_kind(claim) == "paper"
    summary = summarize([{"paper": "p", "scale": "smoke", "claims": [row]}])["papers"]["p"]["X-1"]
    assert _kind(summary, SIZED_BY_PILOT) == SIZED_BY_PILOT
    both = dataclasses.replace(sized, falsifier=dataclasses.replace(
        sized.falsifier, measure=lambda r: [Part("x", EFFECT, 0.0)]))
    (row,) = evaluate([both], {})
    assert row["standing"] == "cannot discriminate"
    summary = summarize([{"paper": "p", "scale": "smoke", "claims": [row]}])["papers"]["p"]["X-1"]
    assert _kind(summary, SIZED_BY_PILOT) == "cannot discriminate"
    unmeasured = dataclasses.replace(sized, not_measurable=lambda cfg: "not run here")
    (row,) = evaluate([unmeasured], {})  # no falsifier was read: not filed as one fixed by its pilot
    assert row["standing"] == "replication" == standing(row)
    summary = summarize([{"paper": "p", "scale": "smoke", "claims": [row]}])["papers"]["p"]["X-1"]
    assert _kind(summary, SIZED_BY_PILOT) == "paper"


def test_no_falsifier_is_sized_by_its_own_pilot_any_more():
    """SC-1, SC-3, CL-2 and ST-1 once sized their margins from the pilot's contrast (NTK, NTP, the
    ratio), which their falsifiers read; their margins now come from the noise, and no claim says so."""
    found = {key.split("/")[1] for key, c in _paper_claims("config.yaml").items()
             if c.falsifier is not None and c.falsifier.sized_by_pilot}
    assert found == set()
