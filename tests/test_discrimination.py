"""A replication must be shown to tell (issue 85): a replicated claim counts only when its falsifier
reads "not replicated" or the paired contrast (claim minus falsifier, same seeds) is significant, and
no falsifier part reads "replicated" as the claim does (a two-sided claim's complementary bound
excepted)."""

from __future__ import annotations

import pytest

from replikit.reporting.report import row_kind
from replikit.scoring.claims import (
    FALSIFIER_INCONCLUSIVE,
    Claim,
    Falsifier,
    Part,
    Source,
    bound_groups,
    evaluate,
    falsifier_text,
)
from replikit.scoring.scorecard_reference import compare, summarize
from replikit.tools.publish import _kind

SRC = Source("A sentence of the paper.", "a paper, abstract")
EFFECT = {0: 0.2, 1: 0.3, 2: 0.25, 3: 0.22, 4: 0.28}  # clearly above 0
NONE = {0: -0.2, 1: -0.3, 2: -0.25, 3: -0.22, 4: -0.28}  # clearly below 0
NEAR_ZERO = {0: 0.05, 1: -0.05, 2: 0.02, 3: -0.03, 4: 0.01}  # inconclusive, well under EFFECT
NOISY_EFFECT = {0: 0.3, 1: -0.1, 2: 0.35, 3: 0.2, 4: 0.25}  # inconclusive, and as large as EFFECT


def _row(own: list[Part], falsified: list[Part]) -> dict:
    claim = Claim("X-1", "s", "v", "ps", "stat", "rule", lambda r: own, source=SRC,
                  falsifier=Falsifier("no effect", "it vanishes there", lambda r: falsified))
    return evaluate([claim], {})[0]


def _one(own: dict, falsified: dict) -> dict:
    return _row([Part("x", dict(own), 0.0)], [Part("x", dict(falsified), 0.0)])


def test_an_inconclusive_falsifier_tells_only_through_a_significant_paired_contrast():
    told = _one(EFFECT, NEAR_ZERO)
    assert told["falsifier"]["verdict"] == "inconclusive"
    assert told["falsifier"]["discrimination"]["tells"] == "contrast" and told["standing"] == "replication"
    assert "told apart by the paired contrast" in falsifier_text(told)
    untold = _one(EFFECT, NOISY_EFFECT)
    assert untold["falsifier"]["verdict"] == "inconclusive"
    assert untold["falsifier"]["discrimination"]["contrast"][0]["verdict"] != "replicated"
    assert untold["standing"] == FALSIFIER_INCONCLUSIVE == row_kind(untold)
    assert "not told apart" in falsifier_text(untold)


def test_a_falsifier_part_that_reads_replicated_is_not_hidden_by_another_that_does_not():
    row = _row([Part("a", dict(EFFECT), 0.0), Part("b", dict(EFFECT), 0.0)],
               [Part("a", dict(EFFECT), 0.0), Part("b", dict(NONE), 0.0)])
    assert row["falsifier"]["verdict"] == "not replicated"  # combined, it would have counted
    assert row["falsifier"]["discrimination"]["fooled"] == ["a"]
    assert row["standing"] == "cannot discriminate"
    assert "a reads replicated too" in falsifier_text(row)


def _band(label: str, d: dict, tol: float) -> list[Part]:
    """The two bounds of |d| < tol, as depthwise transfer writes an equivalence."""
    return [Part(f"{label} < +{tol}", dict(d), tol, direction="below"),
            Part(f"{label} > -{tol}", dict(d), -tol, direction="above")]


def _negated_band(label: str, d: dict, tol: float) -> list[Part]:
    """The same, as continual learning writes it: the statistic and its negative, each below tol."""
    return [Part(f"{label} < +{tol}", dict(d), tol, direction="below"),
            Part(f"-{label} < +{tol}", {s: -v for s, v in d.items()}, tol, direction="below")]


@pytest.mark.parametrize("band", [_band, _negated_band])
def test_a_two_sided_claim_needs_its_falsifier_to_break_one_bound_and_no_more(band):
    flat = NEAR_ZERO
    moved = {s: 1.0 + v for s, v in NEAR_ZERO.items()}  # the paper's contrast: far outside the band
    assert bound_groups(band("d", flat, 0.5)) == [[0, 1]]
    row = _row(band("d", flat, 0.5), band("d", moved, 0.5))
    assert [p["verdict"] for p in row["falsifier"]["parts"]] == ["not replicated", "replicated"]
    assert row["falsifier"]["discrimination"]["fooled"] == [] and row["standing"] == "replication"
    assert "complementary bound reads replicated" in falsifier_text(row)
    inside = _row(band("d", flat, 0.5), band("d", {s: v / 2 for s, v in flat.items()}, 0.5))
    assert inside["standing"] == "cannot discriminate"


@pytest.mark.parametrize("band", [_band, _negated_band])
def test_an_equivalence_tells_only_by_its_falsifier_breaking_a_bound_not_by_the_paired_contrast(band):
    """CL-5 at the default, 2026-12-07: its margin (0.25 decades) wider than the paper's contrast (about
    0.19), the falsifier inconclusive inside the band, and the paired contrast significant. That the two
    settings differ does not show that the margin can see the paper's contrast: the row is not counted."""
    flat = NEAR_ZERO
    within = {0: 0.12, 1: 0.3, 2: 0.15, 3: 0.28, 4: 0.2}  # the paper's contrast: its interval crosses 0.25
    row = _row(band("d", flat, 0.25), band("d", within, 0.25))
    assert row["falsifier"]["verdict"] != "not replicated"
    assert any(c["verdict"] == "replicated" for c in row["falsifier"]["discrimination"]["contrast"])
    assert row["falsifier"]["discrimination"]["tells"] == "" and row["standing"] == FALSIFIER_INCONCLUSIVE
    beyond = _row(band("d", flat, 0.1), band("d", within, 0.1))  # a margin the contrast exceeds
    assert beyond["falsifier"]["discrimination"]["tells"] == "falsifier"
    assert beyond["standing"] == "replication"


def test_parts_of_different_statistics_or_an_empty_band_are_not_two_bounds():
    assert bound_groups([Part("a", dict(EFFECT), 0.0), Part("b", dict(EFFECT), 0.0)]) == [[0], [1]]
    crossed = [Part("lo", dict(EFFECT), 0.5, direction="above"), Part("hi", dict(EFFECT), 0.1, "below")]
    assert bound_groups(crossed) == [[0], [1]]


def test_a_falsifier_with_fewer_parts_than_its_claim_tells_by_its_own_verdict():
    parts = [Part(n, dict(EFFECT), 0.0) for n in "abc"]
    told = _row(parts, [Part("all", dict(NONE), 0.0)])
    assert told["falsifier"]["discrimination"]["contrast"] == [] and told["standing"] == "replication"
    untold = _row([Part(n, dict(EFFECT), 0.0) for n in "abc"], [Part("all", dict(NEAR_ZERO), 0.0)])
    assert untold["standing"] == FALSIFIER_INCONCLUSIVE


def test_a_published_snapshot_keeps_the_standing_and_the_guard_sees_it_move():
    rows = {"told": _one(EFFECT, NEAR_ZERO), "untold": _one(EFFECT, NOISY_EFFECT)}
    for row in rows.values():
        summary = summarize([{"paper": "p", "scale": "smoke", "claims": [row]}])["papers"]["p"]["X-1"]
        assert summary["falsifier"]["discrimination"]["contrast"]  # the contrast's evidence is published
        assert _kind(summary, "paper") == ("paper" if row["standing"] == "replication" else row["standing"])
    ref, now = ({"paper": "p", "scale": "smoke", "claims": [rows[k]]} for k in ("told", "untold"))
    assert any("tells 'contrast' -> ''" in line for line in compare(summarize([ref]), summarize([now])))


def test_a_claim_whose_pilot_ran_at_its_verdict_settings_is_counted_apart():
    from dataclasses import replace

    from replikit.scoring.claims import KNOWN_FROM_PILOT
    from replikit.tools.publish import declared_kind

    claim = Claim("X-1", "s", "v", "ps", "stat", "rule", lambda r: [Part("x", dict(EFFECT), 0.0)], source=SRC,
                  falsifier=Falsifier("no effect", "it vanishes", lambda r: [Part("x", dict(NONE), 0.0)]),
                  known_from_pilot="its pilot ran here")
    (row,) = evaluate([claim], {})
    assert row["standing"] == KNOWN_FROM_PILOT == row_kind(row) == declared_kind(claim)
    summary = summarize([{"paper": "p", "scale": "smoke", "claims": [row]}])["papers"]["p"]["X-1"]
    assert _kind(summary, KNOWN_FROM_PILOT) == KNOWN_FROM_PILOT
    (unmeasured,) = evaluate([replace(claim, not_measurable=lambda cfg: "not here")], {})
    assert unmeasured["standing"] == "replication"


@pytest.mark.parametrize("origin, want", [("paper's contrast", "replication"),
                                          ("our construction", "falsifier of our construction"),
                                          ("outcome known before", "falsifier outcome known before")])
def test_only_the_papers_own_contrast_makes_a_counted_replication(origin, want):
    from replikit.tools.publish import declared_kind

    claim = Claim("X-1", "s", "v", "ps", "stat", "rule", lambda r: [Part("x", dict(EFFECT), 0.0)], source=SRC,
                  falsifier=Falsifier("no effect", "it vanishes", lambda r: [Part("x", dict(NONE), 0.0)],
                                      origin=origin))
    (row,) = evaluate([claim], {})
    assert row["falsifier"]["origin"] == origin and row["standing"] == want
    assert row_kind(row) == ("paper" if want == "replication" else want)
    assert declared_kind(claim) == ("paper" if want == "replication" else want)
    with pytest.raises(ValueError, match="origin must be one of"):
        Falsifier("x", "y", lambda r: [], origin="a hunch")
