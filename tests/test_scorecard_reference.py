"""The verdict-drift guard: a changed smoke verdict or a moved number fails, with a readable diff."""

import copy
import json

import pytest

from replikit.core.io import write_json
from replikit.scoring.scorecard_reference import compare, main, summarize


def _card():
    part = {"label": "gap", "verdict": "inconclusive", "mean": 0.10}
    return {"paper": "p", "scale": "smoke", "claims": [
        {"id": "P-1", "verdict": "inconclusive", "parts": [part]},
        {"id": "P-2", "verdict": "replicated",
         "parts": [{"label": "acc", "verdict": "replicated", "mean": 0.9}]}]}


def test_identical_scorecards_agree_and_noise_within_tolerance_passes():
    ref = summarize([_card()])
    card = _card()
    card["claims"][1]["parts"][0]["mean"] = 0.9 + 1e-6
    assert compare(ref, summarize([card])) == []


def test_a_changed_verdict_a_moved_number_and_a_vanished_part_are_each_one_line(tmp_path, capsys):
    ref = summarize([_card()])
    card = copy.deepcopy(_card())
    card["claims"][1]["verdict"] = card["claims"][1]["parts"][0]["verdict"] = "not replicated"
    card["claims"][0]["parts"][0]["mean"] = 0.2
    card["claims"][0]["parts"].append({"label": "new", "verdict": "inconclusive", "mean": 0.0})
    diff = compare(ref, summarize([card]))
    assert diff == ["p P-1 [gap]: mean 0.1 -> 0.2 (tolerance 0.02 + 0.05 x |reference|)",
                    "p P-1 [new]: new part",
                    "p P-2: verdict 'replicated' -> 'not replicated'",
                    "p P-2 [acc]: verdict 'replicated' -> 'not replicated'"]
    write_json(tmp_path / "ref.json", ref)
    write_json(tmp_path / "claims.json", card)
    assert main(["check", str(tmp_path / "claims.json"), "--reference", str(tmp_path / "ref.json")]) == 1
    assert "verdict 'replicated' -> 'not replicated'" in capsys.readouterr().out


def test_the_reference_holds_each_parts_stability_and_a_reference_without_it_is_named():
    card = _card()
    card["claims"][1]["parts"][0]["stability"] = 0.8567
    ref = summarize([card])
    assert ref["papers"]["p"]["P-2"]["parts"]["acc"]["stability"] == 0.857
    assert ref["papers"]["p"]["P-1"]["parts"]["gap"]["stability"] is None
    assert compare(ref, summarize([card])) == []
    old = copy.deepcopy(ref)
    del old["papers"]["p"]["P-2"]["parts"]["acc"]["stability"]
    assert compare(old, summarize([card])) == [
        "p P-2 [acc]: the reference holds no stability for it (written before stability was judged): "
        "write the reference again"]


def test_the_reference_names_the_commit_that_judged_its_claims_and_compares_without_it():
    """`claims_by` is the claims jobs' commit (dirty where analysis code was uncommitted); several
    commits are named as such; the guard compares verdicts and means only."""
    def card(commit: str, uncommitted: list[str]) -> dict:
        return {**_card(), "provenance": {"git_commit": commit, "analysis_uncommitted": uncommitted}}

    one = summarize([card("abc", [])])
    assert one["claims_by"] == {"commit": "abc", "dirty": False}
    assert summarize([card("abc", ["src/x.py"])])["claims_by"]["dirty"]
    assert summarize([card("abc", []), {**card("def", []), "paper": "q"}])["claims_by"]["commit"] == \
        "several: abc, def"
    assert "claims_by" not in summarize([_card()]) and compare(one, summarize([_card()])) == []


def test_a_machine_variant_is_recorded_apart_and_passes_only_the_rows_it_holds(tmp_path, monkeypatch, capsys):
    """A CPU type whose rows differ (BLAS kernels near a margin) is kept as a variant: the reference's
    own rows stay, the machine's differing claims are recorded beside them, and a run matching either
    passes, while a third result still fails."""
    import replikit.scoring.scorecard_reference as sr

    write_json(tmp_path / "ref.json", summarize([_card()]))
    other = copy.deepcopy(_card())
    other["claims"][1]["verdict"] = other["claims"][1]["parts"][0]["verdict"] = "inconclusive"
    write_json(tmp_path / "claims.json", other)
    monkeypatch.setattr(sr, "machine", lambda: "CPU B, AVX2")
    refarg = ["--reference", str(tmp_path / "ref.json")]
    assert main(["write", "--machine", str(tmp_path / "claims.json"), *refarg]) == 0
    ref = json.loads((tmp_path / "ref.json").read_text())
    assert ref["papers"] == summarize([_card()])["papers"]  # the reference's own rows are unchanged
    assert list(ref["machine_variants"]["CPU B, AVX2"]["papers"]["p"]) == ["P-2"]  # only what differs
    assert compare(ref, summarize([_card()])) == [] and compare(ref, summarize([other])) == []
    third = copy.deepcopy(other)
    third["claims"][1]["parts"][0]["mean"] = 0.5  # neither machine's row
    assert compare(ref, summarize([third])) == [  # judged against the reference's own row
        "p P-2: verdict 'replicated' -> 'inconclusive'",
        "p P-2 [acc]: verdict 'replicated' -> 'inconclusive'",
        "p P-2 [acc]: mean 0.9 -> 0.5 (tolerance 0.02 + 0.05 x |reference|)"]
    # a variant cannot add a claim, and a new reference drops the variants, saying so
    extra = {**_card(), "paper": "q"}
    write_json(tmp_path / "extra.json", extra)
    with pytest.raises(SystemExit, match="not in the reference: q P-1, q P-2"):
        main(["write", "--machine", str(tmp_path / "extra.json"), *refarg])
    assert main(["write", str(tmp_path / "claims.json"), *refarg]) == 0
    assert "dropped the variants of CPU B, AVX2" in capsys.readouterr().out
    ref = json.loads((tmp_path / "ref.json").read_text())
    assert "machine_variants" not in ref and ref["machine"] == "CPU B, AVX2"


def test_a_run_never_mixes_two_machines_rows_and_the_reference_machine_records_no_variant(
        tmp_path, monkeypatch, capsys):
    import replikit.scoring.scorecard_reference as sr

    base = _card()
    ref = {**summarize([base]), "machine": "CPU A"}
    b, c = copy.deepcopy(base), copy.deepcopy(base)
    b["claims"][1]["verdict"] = b["claims"][1]["parts"][0]["verdict"] = "inconclusive"  # CPU B: P-2 differs
    c["claims"][0]["parts"][0]["mean"] = 0.3  # CPU C: P-1 differs
    ref = sr.with_machine_variant(ref, summarize([b]), "CPU B")
    ref = sr.with_machine_variant(ref, summarize([c]), "CPU C")
    assert compare(ref, summarize([b])) == [] and compare(ref, summarize([c])) == []
    assert sr.accepted_variant(ref, summarize([c])) == "CPU C"
    assert sr.accepted_variant(ref, summarize([base])) is None
    both = copy.deepcopy(b)
    both["claims"][0]["parts"][0]["mean"] = 0.3  # B's P-2 with C's P-1: no machine gave this
    assert compare(ref, summarize([both])) == [  # judged against the reference's own rows
        "p P-1 [gap]: mean 0.1 -> 0.3 (tolerance 0.02 + 0.05 x |reference|)",
        "p P-2: verdict 'replicated' -> 'inconclusive'",
        "p P-2 [acc]: verdict 'replicated' -> 'inconclusive'"]
    with pytest.raises(SystemExit, match="a change, not a variant"):
        sr.with_machine_variant(ref, summarize([b]), "CPU A")
    write_json(tmp_path / "ref.json", ref)
    write_json(tmp_path / "claims.json", c)
    assert main(["check", str(tmp_path / "claims.json"), "--reference", str(tmp_path / "ref.json")]) == 0
    assert "it matches those of CPU C" in capsys.readouterr().out
