"""Headline verdicts from seeds no one had seen (issue 64): config key <paper>.fresh_seeds.

A row whose margin, statistic or settings were fixed after its seeds had been seen is judged again on
fresh seeds; its headline (verdict, parts, standing, seeds), and so every count, is the fresh set's,
and the row keeps the seen set's judgement beside it (`seed_sets`). The default scale declares them;
the smoke scale (CI) declares none, so CI runs no extra job.
"""

from __future__ import annotations

import copy
import shutil
from types import SimpleNamespace

import pytest

from replikit.core.config import load_config
from replikit.papers import glue, registry
from replikit.papers.glue import FRESH
from replikit.reporting import docs
from replikit.reporting.report import load_inputs, paper_lines, render
from replikit.scoring.claims import Claim, Falsifier, Part, Source, judge, write_scorecard
from replikit.scoring.fidelity import deviations, paper_settings
from replikit.scoring.scorecard_reference import compare, summarize
from replikit.scoring.seed_sets import named, with_seed_sets
from tests.conftest import ROOT
from tests.test_report import markdown_table_problems

SCHEMA = ROOT / "workflow/schemas/config.schema.yaml"
SEEN, FRESH_SEEDS, LATER = [0, 1, 2, 3, 4], [10, 11, 12, 13, 14], [20, 21, 22, 23, 24]
# the rows whose margin, statistic or settings were fixed after seeds 0-4 had run at the default scale,
# by seed set: seeds 20-24 for the rows whose margin rule was replaced after 10-14 had been seen too
DECLARED = {"depthwise_transfer": [(FRESH_SEEDS, ["DT-1", "DT-3", "DT-4"])],
            "continual_learning": [(FRESH_SEEDS, ["CL-3", "CL-4", "CL-5"]), (LATER, ["CL-2"])],
            "shaped_transformer": [(FRESH_SEEDS, ["ST-3"]), (LATER, ["ST-1"])],
            "super_consistency": [(LATER, ["SC-1", "SC-3"])]}
STATS = {"ci_level": 0.9, "min_seeds": 5}


@pytest.fixture(scope="module")
def scales() -> dict[str, dict]:
    return {name: load_config(ROOT / f"config/{name}.yaml", SCHEMA)
            for name in ("config", "smoke", "paper", "preflight")}


def _claim(cid: str) -> Claim:
    """A claim whose statistic is the results' per-seed `gap`, above 0; its falsifier reads it negated."""
    return Claim(cid, "a gap opens", "qualitative", "abstract", "gap per seed", "CI > 0",
                 lambda r: [Part("gap", dict(r["gap"]), 0.0)],
                 source=Source("A gap opens.", "X et al., abstract"), figures=("fig",),
                 falsifier=Falsifier("no treatment", "the gap should close",
                                     lambda r: [Part("gap", {s: -v for s, v in r["gap"].items()}, 0.0)]))


def _judged() -> list[dict]:
    """T-1 and T-2 judged on seen seeds with no effect; T-1 again on fresh seeds with a clear one."""
    claims = [_claim("T-1"), _claim("T-2")]
    paper = {"cfg": {}, "seeds": SEEN}
    seen = {"gap": dict(zip(SEEN, [-0.02, 0.01, 0.03, -0.01, 0.0], strict=True))}
    fresh = {"gap": dict(zip(FRESH_SEEDS, [0.5, 0.6, 0.55, 0.52, 0.58], strict=True))}
    rows = named(judge(claims, seen, {}, STATS, paper, SEEN), SEEN)
    fresh_rows = judge(claims[:1], fresh, {}, STATS, paper, FRESH_SEEDS)
    return with_seed_sets(rows, fresh_rows, SEEN, FRESH_SEEDS)


def test_a_row_judged_on_two_seed_sets_takes_its_headline_from_the_fresh_one():
    t1, t2 = _judged()
    assert t1["verdict"] == "replicated" and t1["standing"] == "replication"
    assert t1["seeds"] == FRESH_SEEDS and t1["n_seeds"] == 5
    assert set(t1["parts"][0]["per_seed"]) == set(FRESH_SEEDS)
    assert t1["falsifier"]["verdict"] == "not replicated"
    seen, fresh = t1["seed_sets"]
    assert (seen["seeds"], seen["verdict"], seen["headline"]) == (SEEN, "inconclusive", False)
    assert set(seen["parts"][0]["per_seed"]) == set(SEEN) and seen["role"].startswith("seen before")
    assert (fresh["seeds"], fresh["verdict"], fresh["headline"]) == (FRESH_SEEDS, "replicated", True)
    assert fresh["role"].startswith("fresh")
    # a row not listed keeps its one seed set, and names it
    assert "seed_sets" not in t2 and t2["seeds"] == SEEN and t2["verdict"] == "inconclusive"


def test_the_counts_the_report_and_the_docs_use_the_fresh_verdict(tmp_path, root):
    rows = _judged()
    card = write_scorecard(str(tmp_path / "claims.json"), "paperx", "Paper X", "default", None, SEEN, rows,
                           {})
    inputs = load_inputs([str(tmp_path / "claims.json")], [], [])
    assert inputs["counts"][0].startswith("default: 2 paper claims with a falsifier (replications): "
                                          "1 replicated, 0 not replicated, 1 inconclusive"), inputs["counts"]
    assert ": 1 replicated, 1 inconclusive" in inputs["paper_lines"][0]["line"]
    html, md = tmp_path / "report" / "index.html", tmp_path / "report" / "index.md"
    render(str(root / "reports"), inputs, str(html), str(md))
    for text in (md.read_text(), html.read_text()):
        assert "seed sets" in text
        assert "seeds 0-4 (seen before the row" in text
        assert "seeds 10-14 (fresh: never seen before they were fixed; the headline" in text
        assert "5 (seeds 10-14)" in text and "5 (seeds 0-4)" in text  # each row names its seeds
        assert "gap: 0.002 [" in text  # the seen set's parts, beside the headline's own
    assert not markdown_table_problems(md.read_text())
    # the published snapshot and the documents' blocks read the headline too
    summary = summarize([card])["papers"]["paperx"]
    assert summary["T-1"]["verdict"] == "replicated" and summary["T-1"]["seeds"] == FRESH_SEEDS
    assert [s["seeds"] for s in summary["T-1"]["seed_sets"]] == [SEEN, FRESH_SEEDS]
    assert "seed_sets" not in summary["T-2"]  # a row on one seed set: the smoke reference's shape
    snap = {"made_by": {"commit": "abc", "code": {}, "how": "publish"},
            "papers": {"paperx": {cid: {**row, "kind": "paper", "measured": True}
                                  for cid, row in summary.items()}}}
    assert docs._counts(docs._all_claims(snap))["paper"] == {"replicated": 1, "inconclusive": 1}
    table = docs.block_scorecard_table({"scorecard-default": snap}, "default")
    assert "| T-1 | paper | replicated (fresh seeds 10-14; seen seeds 0-4: inconclusive) |" in table
    assert "| T-2 | paper | inconclusive |" in table


def test_the_default_scale_declares_the_fresh_rows_and_the_smoke_scale_none(scales):
    for paper, sets in DECLARED.items():
        want = [{"seeds": s, "claims": ids} for s, ids in sets]
        sets = glue.fresh_seeds(scales["config"], paper)
        declared = [{k: v for k, v in b.items() if k != "runs_with"} for b in sets]
        assert declared == want, paper
    declared = {p for p in scales["config"]["papers"] if glue.fresh_seeds(scales["config"], p)}
    assert declared == set(DECLARED)
    for scale in ("smoke", "paper", "preflight"):  # CI's scale gains no job; the others none either
        assert not [p for p in scales[scale]["papers"] if "fresh_seeds" in scales[scale][p]], scale


def test_fresh_seeds_train_the_runs_their_set_names_at_default_only(scales):
    """Each set trains the runs its `runs_with` names (those its claims read; CI's judging again of the
    committed default runs shows the rows unchanged), every run the claims read where it names none."""
    for paper in DECLARED:
        p, cfg, smoke = registry.get(paper), scales["config"][paper], scales["smoke"][paper]
        sets = glue.fresh_seeds(scales["config"], paper)
        inputs = glue.claim_inputs(p, cfg, p.seeds(cfg, SEEN), sets)
        assert {k: v for k, v in inputs.items() if not k.startswith(FRESH)} == p.claim_inputs(cfg, SEEN)
        for kind, figure in p.claim_reads.items():
            want = [p.run_file(kind, run, s) for block in sets
                    for run in glue.earlier_runs(p, cfg, block, figure) for s in block["seeds"]]
            assert inputs[FRESH + kind] == list(dict.fromkeys(want))
            every = [f for block in sets for f in p.per_run_files(cfg, kind, figure, block["seeds"])]
            assert set(inputs[FRESH + kind]) <= set(every)
        fresh = glue.fresh_seeds(scales["smoke"], paper)
        assert fresh == [] and glue.claim_inputs(p, smoke, SEEN, fresh) == p.claim_inputs(smoke, SEEN)
    dt, dt_cfg = registry.get("depthwise_transfer"), scales["config"]["depthwise_transfer"]
    (block,) = glue.fresh_seeds(scales["config"], "depthwise_transfer")
    assert len(glue.earlier_runs(dt, dt_cfg, block)) == 12  # of 18
    assert len(glue.earlier_runs(dt, dt_cfg, {**block, "runs_with": None})) == 18


def test_fresh_seeds_change_the_config_of_no_run(scales):
    """Existing runs keep their names and configs (Snakemake retrains nothing); the new runs differ
    only by seed."""
    for paper in DECLARED:
        p, cfg = registry.get(paper), scales["config"][paper]
        bare = {k: v for k, v in cfg.items() if k != "fresh_seeds"}
        for stage in p.stages:
            for run in p.runs_of(cfg) if stage.config else ():
                w = SimpleNamespace(run=run, seed="10", items=lambda: [])
                assert stage.config(cfg, w) == stage.config(bare, w), (paper, stage.name, run)
        # nor is the key, as the claims read the block, a deviation from the paper's settings
        devs = deviations(glue.judged_config(cfg), scales["paper"][paper])
        assert devs and not [d for d in devs if d["key"].startswith("fresh_seeds")]


def test_fresh_seeds_must_be_unseen_and_name_the_papers_claims(scales):
    p, config = registry.get("depthwise_transfer"), copy.deepcopy(scales["config"])
    assert glue.fresh_seeds_errors(p, config) == []
    config["depthwise_transfer"]["fresh_seeds"] = {"seeds": [4, 10], "claims": ["DT-1", "DT-9"]}
    errors = glue.fresh_seeds_errors(p, config)
    assert any("depthwise_transfer.fresh_seeds.seeds" in e and "[4]" in e for e in errors), errors
    assert any("depthwise_transfer.fresh_seeds.claims" in e and "DT-9" in e for e in errors), errors
    config["depthwise_transfer"]["fresh_seeds"] = {"seeds": [10], "claims": ["DT-1"], "runs_with": "nowhere"}
    (error,) = glue.fresh_seeds_errors(p, config)
    assert "depthwise_transfer.fresh_seeds.runs_with" in error and "'nowhere' is in no run's name" in error


def test_a_ladder_rung_runs_only_its_own_seeds():
    from replikit.plan import ladder as ladders
    from replikit.plan.bill import load

    ladder = ladders.load("depthwise_transfer")
    config = load([], ladders.rung_config(ladder, ladder.rungs[1]))
    assert config["scale"] == "default" and config["depthwise_transfer"]["fresh_seeds"]  # its base block's
    assert glue.fresh_seeds(config, "depthwise_transfer") == []
    assert glue.fresh_seeds_errors(registry.get("depthwise_transfer"), {**config, "seeds": FRESH_SEEDS}) == []


def _claims_job(tmp_path, monkeypatch, scales, fresh: dict | list | None) -> SimpleNamespace:
    """A depthwise-transfer claims job on the figure audit's stored smoke runs (seeds 0-2): seed 0 as
    the seen set, `fresh` (config key fresh_seeds: one set or a list) as the fresh ones."""
    tree = tmp_path / "tree"
    shutil.copytree(ROOT / "tests/figure_audit/runs/results/depthwise_transfer",
                    tree / "results/depthwise_transfer")
    monkeypatch.chdir(tree)
    p = registry.get("depthwise_transfer")
    cfg = {**copy.deepcopy(scales["smoke"]["depthwise_transfer"]), "fresh_seeds": fresh}
    cfg.pop("seen_seeds", None)  # the smoke block's; a test sets its own
    sets = glue.fresh_seeds({p.name: cfg}, p.name)  # as papers.smk passes them
    inputs = {k: v for k, v in glue.claim_inputs(p, cfg, [0], sets).items() if k != "manifest"}
    params = SimpleNamespace(paper=p.name, cfg=cfg, seeds=[0], fresh=sets, stats=scales["smoke"]["stats"],
                             scale="smoke",
                             settings=paper_settings(scales["paper"], p.name, p.departures, p.unverified,
                                                     p.figure_only))
    return SimpleNamespace(params=params, input=_Input(inputs), output=[str(tree / "claims.json")],
                           rule="dt_claims")


class _Input(dict):
    """Snakemake's named input list, as far as the claims job reads it."""

    def __getattr__(self, name: str):
        return self[name]


def test_the_claims_job_judges_the_listed_rows_on_the_fresh_runs(tmp_path, monkeypatch, scales):
    from replikit.core.io import read_json

    sm = _claims_job(tmp_path, monkeypatch, scales, {"seeds": [1, 2], "claims": ["DT-1", "DT-3"]})
    glue.score_claims(sm)
    card = read_json(sm.output[0])
    assert card["seeds"] == [0] and card["fresh_seeds"] == [{"seeds": [1, 2], "claims": ["DT-1", "DT-3"]}]
    rows = {r["id"]: r for r in card["claims"]}
    for cid in ("DT-1", "DT-3"):
        row = rows[cid]
        assert row["seeds"] == [1, 2] and [s["seeds"] for s in row["seed_sets"]] == [[0], [1, 2]]
        assert {k for p in row["parts"] for k in p["per_seed"]} <= {"1", "2"}
        assert {k for p in row["seed_sets"][0]["parts"] for k in p["per_seed"]} <= {"0"}
    assert rows["DT-2"]["seeds"] == [0] and "seed_sets" not in rows["DT-2"]
    assert not [d for r in rows.values() for d in r["deviations"] if d["key"].startswith("fresh_seeds")]


def test_each_fresh_set_judges_its_own_claims(tmp_path, monkeypatch, scales):
    """Config key fresh_seeds as a list: a row whose margin changed after a first fresh set had been seen
    takes its headline from a later set, and a claim is in one set only."""
    from replikit.core.io import read_json

    sets = [{"seeds": [1], "claims": ["DT-1"]}, {"seeds": [2], "claims": ["DT-3"]}]
    sm = _claims_job(tmp_path, monkeypatch, scales, sets)
    glue.score_claims(sm)
    card = read_json(sm.output[0])
    rows = {r["id"]: r for r in card["claims"]}
    assert card["fresh_seeds"] == sets and rows["DT-1"]["seeds"] == [1] and rows["DT-3"]["seeds"] == [2]
    assert [s["seeds"] for s in rows["DT-3"]["seed_sets"]] == [[0], [2]] and "seed_sets" not in rows["DT-2"]
    config = copy.deepcopy(scales["config"])
    config["depthwise_transfer"]["fresh_seeds"] = [{"seeds": [10], "claims": ["DT-1"]},
                                                   {"seeds": [20], "claims": ["DT-1", "DT-3"]}]
    (error,) = glue.fresh_seeds_errors(registry.get("depthwise_transfer"), config)
    assert "DT-1 in more than one seed set" in error and "fix:" in error
    config["depthwise_transfer"]["fresh_seeds"] = [{"seeds": [10, 11], "claims": ["DT-1"]},
                                                   {"seeds": [11, 20], "claims": ["DT-3"]}]
    (error,) = glue.fresh_seeds_errors(registry.get("depthwise_transfer"), config)
    assert "seeds [11] in more than one seed set" in error and "fix:" in error


def test_a_missing_fresh_run_is_an_error_naming_the_key_and_the_fix(tmp_path, monkeypatch, scales):
    sm = _claims_job(tmp_path, monkeypatch, scales, {"seeds": [1, 2], "claims": ["DT-1"]})
    fresh = sm.input[FRESH + "metrics"]
    (tmp_path / "tree" / fresh[0]).unlink()  # a fresh run that did not run: never the seen seeds instead
    with pytest.raises(glue.FreshRunsMissing) as err:
        glue.score_claims(sm)
    text = str(err.value)
    assert "'depthwise_transfer.fresh_seeds'" in text and fresh[0] in text and "Fix:" in text
    assert "never judged on the seen seeds" in text
    # nor may the claims job lack the fresh inputs altogether (a rule without them)
    sm.input.pop(FRESH + "metrics")
    with pytest.raises(glue.FreshRunsMissing, match="depthwise_transfer.fresh_seeds"):
        glue.score_claims(sm)
    assert not (tmp_path / "tree" / "claims.json").exists()


def test_a_row_on_seen_seeds_only_is_marked_and_counted_apart(tmp_path, monkeypatch, scales):
    """Config key <paper>.seen_seeds (the smoke scale's rows whose margins were fixed after its seeds had
    been seen; CI runs no fresh seeds): the claims job marks the listed rows, a replication among them
    stands as "seen seeds only", and the published snapshot, its counts and its table say so."""
    from replikit.core.io import read_json
    from replikit.scoring.seed_sets import SEEN_ONLY, seen_only
    from replikit.tools.publish import _kind

    effect = {"gap": dict(zip(SEEN, [0.5, 0.6, 0.55, 0.52, 0.58], strict=True))}
    judged = judge([_claim("T-1"), _claim("T-2")], effect, {}, STATS, {"cfg": {}, "seeds": SEEN}, SEEN)
    rows = seen_only(named(judged, SEEN), ["T-1"])
    assert rows[0]["seen_only"] and rows[0]["standing"] == SEEN_ONLY and rows[0]["verdict"] == "replicated"
    assert "seen_only" not in rows[1] and rows[1]["standing"] == "replication"
    with pytest.raises(KeyError, match="seen seeds only, but not judged: T-9"):
        seen_only(rows, ["T-9"])
    assert "seen_only" not in seen_only([{**rows[1], "parts": []}], ["T-2"])[0]  # not measured: no verdict
    kept = seen_only([{**rows[1], "standing": "cannot discriminate"}], ["T-2"])[0]  # other standings are kept
    assert kept["seen_only"] and kept["standing"] == "cannot discriminate"
    # the report's per-paper line names them among the rows not counted
    line = paper_lines([{"paper": "x", "scale": "smoke", "seeds": SEEN,
                         "claims": [{**r, "source": {}} for r in rows]}])[0]["line"]
    assert line.endswith("1 replication of the paper's claims at smoke (5 seeds): 1 replicated; "
                         "not counted: 1 on seen seeds only"), line
    summary = summarize([{"paper": "x", "scale": "smoke", "claims": rows}])["papers"]["x"]
    assert _kind(summary["T-1"], "paper") == SEEN_ONLY and _kind(summary["T-2"], "paper") == "paper"
    # the CI guard names a row that lost (or gained) its mark
    lost = summarize([{"paper": "x", "scale": "smoke", "claims": [{**rows[0], "seen_only": False}, rows[1]]}])
    assert "x T-1: no longer judged on seen seeds only" in compare(
        {"scale": "smoke", "papers": {"x": summary}}, lost)
    snap = {"made_by": {"commit": "abc", "code": {}, "how": "publish"},
            "papers": {"x": {cid: {**row, "kind": _kind(row, "paper"), "measured": True}
                             for cid, row in summary.items()}}}
    assert docs._counts(docs._all_claims(snap)) == {SEEN_ONLY: {"replicated": 1}, "paper": {"replicated": 1}}
    assert "| T-1 | seen seeds only | replicated (seen seeds only) |" in docs.block_scorecard_table(
        {"scorecard-smoke": snap}, "smoke")
    # a marked row counted by another kind keeps its mark in the README's per-paper cell
    snap["papers"]["x"]["T-2"] = {**snap["papers"]["x"]["T-2"], "kind": "background", "seen_only": True}
    assert "replicated T-1 (seen seeds only), T-2 (background; seen seeds only) |" in (
        docs.block_verdict_summary({"scorecard-smoke": snap}))
    # through the claims job, from the paper's config block
    sm = _claims_job(tmp_path, monkeypatch, scales, None)
    sm.params.cfg["seen_seeds"] = {"claims": ["DT-1"]}
    glue.score_claims(sm)
    card = {r["id"]: r for r in read_json(sm.output[0])["claims"]}
    assert card["DT-1"]["seen_only"] and "seen_only" not in card["DT-2"]
    assert not [d for d in card["DT-1"]["deviations"] if d["key"].startswith("seen_seeds")]
    # a claim that fresh seeds judge takes its headline from them, not marked as seen only
    sm = _claims_job(tmp_path / "fresh", monkeypatch, scales, {"seeds": [1, 2], "claims": ["DT-1"]})
    sm.params.cfg["seen_seeds"] = {"claims": ["DT-1", "DT-3"]}
    glue.score_claims(sm)
    card = {r["id"]: r for r in read_json(sm.output[0])["claims"]}
    assert "seen_only" not in card["DT-1"] and card["DT-1"]["seeds"] == [1, 2] and card["DT-3"]["seen_only"]


def test_seen_seeds_name_the_papers_claims(scales):
    p, config = registry.get("depthwise_transfer"), copy.deepcopy(scales["config"])
    config["depthwise_transfer"]["seen_seeds"] = {"claims": ["DT-1", "DT-2", "DT-9"]}
    (error,) = glue.seen_seeds_errors(p, config)
    assert "'depthwise_transfer.seen_seeds.claims': DT-9 not a claim" in error
    smoke = scales["smoke"]
    assert all(glue.seen_seeds_errors(registry.get(n), smoke) == [] for n in smoke["papers"])
    assert {n: smoke[n]["seen_seeds"]["claims"] for n in smoke["papers"] if smoke[n].get("seen_seeds")} == {
        "continual_learning": ["CL-2", "CL-3", "CL-4", "CL-5", "CL-6", "CL-7"],
        "depthwise_transfer": ["DT-1", "DT-3", "DT-4"], "shaped_transformer": ["ST-1", "ST-3"],
        "super_consistency": ["SC-1", "SC-3"]}
    default = scales["config"]  # until a fresh set registered before it runs judges them (issue 85)
    assert default["continual_learning"]["seen_seeds"] == {"claims": ["CL-6", "CL-7"]}


def test_on_another_dataset_no_seed_set_applies_and_nothing_was_seen(scales):
    """Seed sets are the block's own data's (issue 86): a paper run on another dataset by its key
    `dataset` trains no fresh or earlier seeds, and its claims job marks no row seen or registered."""
    import copy

    config = copy.deepcopy(scales["config"])
    assert glue.on_own_data(config, "continual_learning") and glue.fresh_seeds(config, "continual_learning")
    assert glue.own_dataset("continual_learning", "default") == "mnist"
    assert glue.own_dataset("rank_collapse", "default") is None and glue.on_own_data(config, "rank_collapse")
    config["continual_learning"]["dataset"] = "cifar10"
    assert not glue.on_own_data(config, "continual_learning")
    assert glue.fresh_seeds(config, "continual_learning") == []
    config["latent_lookahead"]["earlier_seeds"] = {"seeds": [30], "claims": ["LL-3"], "runs_with": "maze"}
    assert glue.earlier_seeds(config, "latent_lookahead")  # its own data (a task it generates)
