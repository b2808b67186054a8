import pytest

from replikit.claims import Claim, Part, combine, evaluate


def _decide(values, threshold=0.0, direction="above", min_seeds=3):
    return Part("x", dict(enumerate(values)), threshold, direction).decide(0.95, 2000, min_seeds).verdict


def test_part_verdicts_follow_the_ci():
    assert _decide([0.2, 0.3, 0.25]) == "replicated"
    assert _decide([-0.2, -0.3, -0.25]) == "not replicated"
    assert _decide([-0.2, 0.3, 0.25]) == "inconclusive"
    assert _decide([0.2, 0.3]) == "inconclusive"  # fewer seeds than min_seeds
    assert _decide([0.5, 0.6, 0.55], threshold=0.9, direction="below") == "replicated"
    assert _decide([0.95, 0.97, 0.99], threshold=0.9, direction="below") == "not replicated"


def test_combine():
    assert combine(["replicated", "replicated"]) == "replicated"
    assert combine(["replicated", "inconclusive"]) == "inconclusive"
    assert combine(["inconclusive", "not replicated"]) == "not replicated"
    assert combine([]) == "inconclusive"


def test_evaluate_reports_missing_conditions_as_inconclusive():
    def measure(results):
        return [Part("gap", results["gap"], 0.0)]

    def missing(results):
        raise KeyError("noise100_full_K4")

    claims = [Claim("A", "s", "v", "src", "stat", "rule", measure),
              Claim("B", "s", "v", "src", "stat", "rule", missing)]
    rows = evaluate(claims, {"gap": {0: 0.1, 1: 0.2, 2: 0.15}}, n_boot=1000)
    assert rows[0]["verdict"] == "replicated" and rows[0]["n_seeds"] == 3
    assert rows[0]["parts"][0]["mean"] == pytest.approx(0.15)
    assert rows[1]["verdict"] == "inconclusive" and "noise100_full_K4" in rows[1]["note"]


def test_difference_at_a_floor_is_inconclusive_not_a_verdict():
    from replikit.claims import Claim, difference, evaluate

    zeros = {0: 0.0, 1: 0.0, 2: 0.0}
    learned = {0: 0.3, 1: 0.25, 2: 0.4}

    def both_at_floor(_):
        return [difference("a minus b", zeros, zeros, floor=0.0)]

    def one_learned(_):
        return [difference("a minus b", zeros, learned, floor=0.0)]

    rows = evaluate([Claim("F-1", "s", "v", "src", "stat", "CI > 0", both_at_floor),
                     Claim("F-2", "s", "v", "src", "stat", "CI > 0", one_learned)], {}, n_boot=200)
    assert rows[0]["verdict"] == "inconclusive" and "floor" in rows[0]["note"]
    assert rows[1]["verdict"] == "not replicated" and rows[1]["note"] == ""
