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


def test_identical_scorecards_agree_and_only_round_off_passes():
    """Pinned kernels give bitwise the same numbers: the tolerance admits a JSON round trip's last bits,
    not a CPU's (a move of 1e-6 is a difference)."""
    ref = summarize([_card()])
    card = _card()
    card["claims"][1]["parts"][0]["mean"] = 0.9 + 1e-12
    assert compare(ref, summarize([card])) == []
    card["claims"][1]["parts"][0]["mean"] = 0.9 + 1e-6
    assert compare(ref, summarize([card])) == [
        "p P-2 [acc]: mean 0.9 -> 0.900001 (tolerance 1e-09 + 1e-09 x |reference|)"]


def test_a_changed_verdict_a_moved_number_and_a_vanished_part_are_each_one_line(tmp_path, capsys):
    ref = summarize([_card()])
    card = copy.deepcopy(_card())
    card["claims"][1]["verdict"] = card["claims"][1]["parts"][0]["verdict"] = "not replicated"
    card["claims"][0]["parts"][0]["mean"] = 0.2
    card["claims"][0]["parts"].append({"label": "new", "verdict": "inconclusive", "mean": 0.0})
    diff = compare(ref, summarize([card]))
    assert diff == ["p P-1 [gap]: mean 0.1 -> 0.2 (tolerance 1e-09 + 1e-09 x |reference|)",
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


def test_one_reference_names_its_machine_and_kernels_and_a_difference_is_a_difference(
        tmp_path, monkeypatch):
    """Pinned numerics leave one reference for every CPU: a write names the machine and the kernel
    level it ran at, holds no per-machine rows, and a row that differs fails on any machine."""
    import replikit.scoring.scorecard_reference as sr

    write_json(tmp_path / "claims.json", _card())
    monkeypatch.setattr(sr, "machine", lambda: "CPU B, kernels AVX2")
    refarg = ["--reference", str(tmp_path / "ref.json")]
    assert main(["write", str(tmp_path / "claims.json"), *refarg]) == 0
    ref = json.loads((tmp_path / "ref.json").read_text())
    assert ref["machine"] == "CPU B, kernels AVX2" and "machine_variants" not in ref
    other = copy.deepcopy(_card())
    other["claims"][1]["verdict"] = other["claims"][1]["parts"][0]["verdict"] = "inconclusive"
    assert compare(ref, summarize([other])) == ["p P-2: verdict 'replicated' -> 'inconclusive'",
                                                "p P-2 [acc]: verdict 'replicated' -> 'inconclusive'"]
    write_json(tmp_path / "other.json", other)
    assert main(["check", str(tmp_path / "other.json"), *refarg]) == 1
    with pytest.raises(SystemExit):
        main(["write", "--machine", str(tmp_path / "other.json"), *refarg])  # no per-machine rows
