import pytest

from replikit.scoring.claims import (
    Claim,
    MissingResult,
    Part,
    Source,
    combine,
    combine_magnitudes,
    difference,
    evaluate,
    write_scorecard,
)

SRC = Source("A sentence of the paper.", "a paper, abstract")

def _part(values, threshold=0.0, direction="above", paper_value=None, min_seeds=5, level=0.90):
    return Part("x", dict(enumerate(values)), threshold, direction, paper_value).decide(level, min_seeds)


def test_part_verdicts_follow_the_interval_and_the_sign_flip_test():
    assert _part([0.2, 0.3, 0.25, 0.22, 0.28]).verdict == "replicated"
    assert _part([-0.2, -0.3, -0.25, -0.22, -0.28]).verdict == "not replicated"
    assert _part([-0.2, 0.3, 0.25, 0.1, 0.05]).verdict == "inconclusive"
    assert _part([0.5, 0.6, 0.55, 0.52, 0.58], threshold=0.9, direction="below").verdict == "replicated"
    assert _part([0.95, 0.97, 0.99, 0.96, 0.98], threshold=0.9, direction="below").verdict == "not replicated"


def test_three_seeds_cannot_reach_the_level_however_large_the_effect():
    # The sign-flip test's smallest p-value with 3 seeds is 1/8 > 0.05.
    part = _part([0.2, 0.3, 0.25], min_seeds=2)
    assert part.verdict == "inconclusive" and part.p_value == pytest.approx(1 / 8)


def test_a_negative_seed_blocks_replicated_even_with_a_positive_interval():
    # The 90 % t-interval of [3, 3, 3, 3, -0.1] is about [1.06, 3.70], above 0; but the sign-flip
    # p-value is 2/32 > 0.05 (the t-interval alone over-trusts 5 points), so it is not "replicated".
    part = _part([3.0, 3.0, 3.0, 3.0, -0.1])
    assert part.p_value == pytest.approx(2 / 32) and part.verdict == "inconclusive"


def test_student_t_interval_is_wider_than_the_seed_range_at_few_seeds():
    part = _part([0.1, 0.5, 0.9], min_seeds=2)
    assert part.ci_low < 0.1 and part.ci_high > 0.9  # the old bootstrap gave exactly [0.1, 0.9]


def test_magnitude_compares_the_interval_with_the_paper_value():
    values = [0.10, 0.12, 0.11, 0.09, 0.13]
    assert _part(values, paper_value=0.11).magnitude == "consistent"
    assert _part(values, paper_value=0.155).magnitude == "smaller"
    assert _part(values, paper_value=0.02).magnitude == "larger"
    assert _part(values).magnitude == "no paper number"
    assert combine_magnitudes(["consistent", "no paper number"]) == "consistent"
    assert combine_magnitudes(["smaller", "consistent"]) == "mixed (consistent, smaller)"
    assert combine_magnitudes(["no paper number"]) == "no paper number"


def test_combine():
    assert combine(["replicated", "replicated"]) == "replicated"
    assert combine(["replicated", "inconclusive"]) == "inconclusive"
    assert combine(["inconclusive", "not replicated"]) == "not replicated"
    assert combine([]) == "inconclusive"


GAP = {0: 0.1, 1: 0.2, 2: 0.15, 3: 0.12, 4: 0.18}


def test_a_missing_run_or_metric_fails_naming_it():
    def misspelled(results):
        return [Part("gap", results["gpa"], 0.0)]  # a typo in the metric's name

    with pytest.raises(MissingResult, match="claim B: missing 'gpa'"):
        evaluate([Claim("B", "s", "v", "src", "stat", "rule", misspelled, source=SRC)], {"gap": GAP})


def test_not_measurable_only_where_the_claim_declares_it():
    def needs_maze(results):
        return [Part("maze gap", results["maze"], 0.0)]

    claim = Claim("M", "s", "v", "src", "stat", "rule", needs_maze, source=SRC,
                  not_measurable=lambda cfg: "" if "maze" in cfg["tasks"] else "no maze runs at this scale")
    row = evaluate([claim], {"gap": GAP}, cfg={"tasks": ["sudoku4"]})[0]
    assert row["verdict"] == "inconclusive" and row["measurable"] is False
    assert row["note"] == "not measurable at this scale: no maze runs at this scale"
    with pytest.raises(MissingResult, match="maze"):  # declared measurable, yet the runs are missing
        evaluate([claim], {"gap": GAP}, cfg={"tasks": ["maze"]})


def test_rows_carry_direction_magnitude_and_fidelity():
    def measure(results):
        return [Part("gap", results["gap"], 0.0, paper_value=0.5)]

    devs = [{"key": "model.width", "ours": 8, "paper": 64}, {"key": "grid.k", "ours": [1], "paper": [1, 2]},
            {"key": "other.k", "ours": 1, "paper": 2}]
    rows = evaluate([Claim("A", "s", "v", "src", "stat", "rule", measure, source=SRC, uses=("grid",)),
                     Claim("C", "s", "v", "src", "stat", "rule", measure, source=SRC, uses=("other",))],
                    {"gap": GAP}, deviations=devs)
    a, c = rows
    # a proxy's interval is not compared with a number from the paper's own setting
    assert a["verdict"] == "replicated" and a["magnitude"] == "not comparable (proxy)" and a["n_seeds"] == 5
    assert a["fidelity"] == "proxy" and [d["key"] for d in a["deviations"]] == ["model.width", "grid.k"]
    assert [d["key"] for d in c["deviations"]] == ["model.width", "other.k"]
    faithful = evaluate([Claim("A", "s", "v", "src", "stat", "rule", measure, source=SRC)], {"gap": GAP},
                        deviations=[])
    assert faithful[0]["fidelity"] == "faithful" and faithful[0]["deviations"] == []
    assert faithful[0]["magnitude"] == "smaller"
    assert faithful[0]["source"] == {"quote": SRC.quote, "where": SRC.where, "abstract_only": True,
                                    "background": ""}
    assert faithful[0]["kind"] == "paper"


def test_unverified_settings_and_preflight_are_not_faithful():
    def measure(results):
        return [Part("gap", results["gap"], 0.0, paper_value=0.5)]

    claim = Claim("A", "s", "v", "src", "stat", "rule", measure, source=SRC, uses=("grid",))
    row = evaluate([claim], {"gap": GAP}, deviations=[], unverified=["model"])[0]
    assert row["fidelity"] == "unverified" and row["unverified"] == ["model"]
    assert row["magnitude"] == "not comparable (unverified)"
    pre = evaluate([claim], {"gap": GAP}, deviations=[], preflight=True)[0]
    assert pre["fidelity"] == "preflight" and pre["verdict"] == "inconclusive"
    assert pre["note"].startswith("preflight:")


def test_every_claim_quotes_its_source_and_a_hypothesis_says_what_is_ours():
    with pytest.raises(ValueError, match="quotes the sentence it tests"):
        Claim("A", "s", "v", "src", "stat", "rule", lambda r: [])
    with pytest.raises(ValueError, match="reading"):
        Claim("A", "s", "v", "src", "stat", "rule", lambda r: [], source=SRC, kind="hypothesis")
    with pytest.raises(ValueError, match="kind"):
        Claim("A", "s", "v", "src", "stat", "rule", lambda r: [], source=SRC, kind="guess")


def test_fewer_seeds_than_the_level_needs_is_inconclusive_with_the_reason():
    def measure(results):
        return [Part("gap", {0: 0.1, 1: 0.2, 2: 0.15}, 0.0)]

    row = evaluate([Claim("A", "s", "v", "src", "stat", "rule", measure, source=SRC)], {}, min_seeds=3)[0]
    assert row["verdict"] == "inconclusive" and "at least 5 are needed" in row["note"]


def test_difference_at_a_floor_is_inconclusive_not_a_verdict():
    zeros = {s: 0.0 for s in range(5)}
    learned = {0: 0.3, 1: 0.25, 2: 0.4, 3: 0.35, 4: 0.3}

    def both_at_floor(_):
        return [difference("a minus b", zeros, zeros, floor=0.0)]

    def one_learned(_):
        return [difference("a minus b", zeros, learned, floor=0.0)]

    rows = evaluate([Claim("F-1", "s", "v", "src", "stat", "CI > 0", both_at_floor, source=SRC),
                     Claim("F-2", "s", "v", "src", "stat", "CI > 0", one_learned, source=SRC)], {})
    assert rows[0]["verdict"] == "inconclusive" and "floor" in rows[0]["note"]
    assert rows[1]["verdict"] == "not replicated" and rows[1]["note"] == ""


def test_a_method_that_never_learned_is_said_not_judged():
    """The claimed-better arm at the floor in every seed, the other above it: 'the method did not
    learn at this scale', inconclusive (without `method` the same numbers read 'not replicated')."""
    zeros = {s: 0.0 for s in range(5)}
    learned = {0: 0.3, 1: 0.25, 2: 0.4, 3: 0.35, 4: 0.3}

    def named(_):
        return [difference("lookahead minus NTP", zeros, learned, floor=0.0, method="lookahead")]

    def baseline_at_floor(_):  # the other arm never learned: the method's gain is evidence
        return [difference("lookahead minus NTP", learned, zeros, floor=0.0, method="lookahead")]

    rows = evaluate([Claim("F-1", "s", "v", "src", "stat", "CI > 0", named, source=SRC),
                     Claim("F-2", "s", "v", "src", "stat", "CI > 0", baseline_at_floor, source=SRC)], {})
    assert rows[0]["verdict"] == "inconclusive"
    assert "lookahead did not learn at this scale" in rows[0]["note"]
    assert rows[1]["verdict"] == "replicated" and rows[1]["note"] == ""


def test_a_method_that_did_not_learn_in_some_seeds_is_judged_and_says_so():
    """The claimed-better arm at the floor in 3 of 5 seeds: the verdict is the rule's (here 'not
    replicated'), and the row names the seeds in which the method did not learn."""
    some = {0: 0.0, 1: 0.78, 2: 0.0, 3: 0.0, 4: 0.015}
    ntp = {0: 0.78, 1: 0.80, 2: 0.82, 3: 0.745, 4: 0.79}

    def partly(_):
        return [difference("lookahead minus NTP", some, ntp, floor=0.0, method="lookahead")]

    row = evaluate([Claim("F-1", "s", "v", "src", "stat", "CI > 0", partly, source=SRC)], {})[0]
    assert row["verdict"] == "not replicated"
    assert "lookahead did not learn in 3 of 5 seeds" in row["note"] and "seeds 0, 2, 3" in row["note"]
    assert row["parts"][0]["caveat"] and not row["parts"][0]["no_evidence"]


def test_rows_are_strict_json_also_with_one_seed_or_no_statistic(tmp_path):
    from replikit.core.io import read_json, write_json

    def measure(_):
        empty = Part("nothing left", {}, 0.0)
        empty.no_evidence = "too few settings"
        return [Part("one seed", {0: 0.3}, 0.0), empty]

    row = evaluate([Claim("J", "s", "v", "src", "stat", "rule", measure, source=SRC)], {}, min_seeds=1)[0]
    write_scorecard(str(tmp_path / "card.json"), "p", "t", "smoke", None, [0], [row], {})
    write_json(tmp_path / "c.json", row)  # allow_nan=False: NaN would raise
    one, empty = read_json(tmp_path / "c.json")["parts"]
    assert one["mean"] == 0.3 and one["ci_low"] is None and one["ci_high"] is None
    assert empty["mean"] is None and empty["verdict"] == "inconclusive"


def test_every_part_shows_its_evidence_and_says_when_all_seeds_are_equal():
    mixed = Part("d", {0: 0.3, 1: 0.2, 2: -0.1, 3: 0.4, 4: 0.1}, 0.0).decide(0.9, 5)
    assert (mixed.n_seeds, mixed.n_agree, mixed.all_equal) == (5, 4, False)
    assert mixed.evidence().startswith("4/5 seeds above 0, sign-flip p = ")
    below = Part("d", {0: -0.3, 1: 0.2, 2: -0.1}, 0.0, direction="below").decide(0.9, 3)
    assert below.evidence().startswith("2/3 seeds below 0")
    same = Part("one grid step", {s: 0.477 for s in range(5)}, 0.0).decide(0.9, 5)
    assert same.all_equal and same.ci_low == same.ci_high == same.mean
    assert same.verdict == "replicated" and same.p_value == 1 / 32
    assert "zero width" in same.evidence() and "sign-flip test alone" in same.evidence()


def test_scorecard_rows_carry_the_evidence_of_each_part():
    claim = Claim("E-1", "s", "v", "src", "stat", "rule",
                  lambda r: [Part("gap", {s: 0.1 + s / 100 for s in range(5)}, 0.0)], source=SRC)
    rows = evaluate([claim], {}, 0.9, 5)
    part = rows[0]["parts"][0]
    assert part["n_agree"] == 5 and part["n_seeds"] == 5 and part["p_value"] == 1 / 32
    assert part["evidence"].startswith("5/5 seeds above 0, sign-flip p = 0.0312")
