"""Rows shown on the seeds they had before the paper's seeds changed (issue 64): config key
<paper>.earlier_seeds. Latent lookahead's default declared it from 2026-11-28 to 2026-12-07 (seeds 0-4
for LL-3 and LL-6 beside the headline's 5-9); no scale declares it today, so these tests put that
declaration back: both seed sets are shown, the headline stays the paper's seeds', and only the runs
LL-3 and LL-6 read (the maze runs, and their falsifier's naked-single Sudoku runs) are trained at 0-4.
"""

from __future__ import annotations

import copy
from types import SimpleNamespace

import pytest

from replikit.core.config import load_config
from replikit.papers import glue, registry
from replikit.papers.glue import EARLIER
from replikit.reporting import docs
from replikit.scoring.claims import evaluate, judge
from replikit.scoring.fidelity import deviations
from replikit.scoring.scorecard_reference import summarize
from replikit.scoring.seed_sets import CURRENT_ROLE, EARLIER_ROLE, named, with_earlier_seeds
from tests.conftest import ROOT
from tests.test_fresh_seeds import STATS, _claim
from tests.test_latent_lookahead import _final

SCHEMA = ROOT / "workflow/schemas/config.schema.yaml"
EARLIER_SEEDS, SEEDS = [0, 1, 2, 3, 4], [5, 6, 7, 8, 9]
LL = "latent_lookahead"
# Latent lookahead's declaration at the default of 2026-11-28 to 2026-12-07.
DECLARATION = {"seeds": EARLIER_SEEDS, "claims": ["LL-3", "LL-6"],
               "runs_with": ["task-maze", "task-sudoku4_singles"]}


@pytest.fixture(scope="module")
def scales() -> dict[str, dict]:
    """The scales' configs; `config` (the default) with latent lookahead's earlier seeds declared."""
    out = {name: load_config(ROOT / f"config/{name}.yaml", SCHEMA) for name in ("config", "smoke", "paper")}
    for name in ("config", "smoke", "paper"):
        assert glue.earlier_seeds(out[name], LL) is None, name
    out["config"][LL]["earlier_seeds"] = copy.deepcopy(DECLARATION)
    return out


def _judged() -> list[dict]:
    """T-1 and T-2 judged on the paper's seeds with a clear effect; T-1 on its earlier seeds with none."""
    claims = [_claim("T-1"), _claim("T-2")]
    paper = {"cfg": {}, "seeds": SEEDS}
    now = {"gap": dict(zip(SEEDS, [0.5, 0.6, 0.55, 0.52, 0.58], strict=True))}
    before = {"gap": dict(zip(EARLIER_SEEDS, [-0.02, 0.01, 0.03, -0.01, 0.0], strict=True))}
    rows = named(judge(claims, now, {}, STATS, paper, SEEDS), SEEDS)
    return with_earlier_seeds(rows, judge(claims[:1], before, {}, STATS, paper, EARLIER_SEEDS), SEEDS,
                              EARLIER_SEEDS)


def test_the_headline_stays_the_papers_seeds_and_the_earlier_set_is_shown_beside_it():
    t1, t2 = _judged()
    assert (t1["verdict"], t1["seeds"]) == ("replicated", SEEDS)  # what every count reads
    before, now = t1["seed_sets"]
    assert (before["seeds"], before["verdict"], before["headline"], before["role"]) == (
        EARLIER_SEEDS, "inconclusive", False, EARLIER_ROLE)
    assert (now["seeds"], now["verdict"], now["headline"], now["role"]) == (SEEDS, "replicated", True,
                                                                           CURRENT_ROLE)
    assert "seed_sets" not in t2 and t2["seeds"] == SEEDS


def test_the_docs_table_names_both_sets(tmp_path):
    from replikit.scoring.claims import write_scorecard

    card = write_scorecard(str(tmp_path / "claims.json"), "paperx", "Paper X", "default", None, SEEDS,
                           _judged(), {})
    summary = summarize([card])["papers"]["paperx"]
    snap = {"made_by": {"commit": "abc", "code": {}, "how": "publish"},
            "papers": {"paperx": {cid: {**row, "kind": "paper", "measured": True}
                                  for cid, row in summary.items()}}}
    table = docs.block_scorecard_table({"scorecard-default": snap}, "default")
    assert "| T-1 | paper | replicated (seeds 5-9; earlier seeds 0-4: inconclusive) |" in table


def test_latent_lookahead_trains_only_the_runs_ll3_and_ll6_read_at_the_earlier_seeds(scales):
    p, cfg = registry.get(LL), scales["config"][LL]
    earlier = glue.earlier_seeds(scales["config"], LL)
    assert earlier == DECLARATION
    assert glue.earlier_seeds_errors(p, scales["config"]) == []
    seeds = p.seeds(cfg, SEEDS)  # the default's own, 10-14
    inputs = glue.claim_inputs(p, cfg, seeds, None, earlier)
    assert {k: v for k, v in inputs.items() if not k.startswith(EARLIER)} == p.claim_inputs(cfg, seeds)
    runs = {f.split("/runs/")[1].split("/")[0] for f in inputs[EARLIER + "metrics"]}
    arms = ("lookahead_tau-4", "ntp_tau-0", "pause_tau-4")
    assert runs == {f"train_task-{task}_method-{m}_mask-bidir" for task in ("maze", "sudoku4_singles")
                    for m in arms}
    assert len(inputs[EARLIER + "metrics"]) == 6 * len(EARLIER_SEEDS)
    for scale in ("smoke", "paper"):
        assert glue.earlier_seeds(scales[scale], LL) is None, scale


def test_the_earlier_seeds_train_every_run_the_claims_and_their_falsifiers_read(scales):
    """Judged on the earlier runs alone, LL-3 and LL-6 and their falsifiers are measured: a run left out
    of `runs_with` would otherwise surface only in the claims job, after the hours of training."""
    p, cfg = registry.get(LL), scales["config"][LL]
    earlier = glue.earlier_seeds(scales["config"], LL)
    runs = glue.earlier_runs(p, cfg, earlier)
    assert EARLIER_SEEDS == list(range(5))  # _final numbers the seeds of each run from 0
    final = _final({r: [0.1 + 0.01 * (i + s) for s in EARLIER_SEEDS] for i, r in enumerate(runs)},
                   dict.fromkeys(runs, 4))
    listed = [c for c in p.claims(p.experiments(cfg), cfg) if c.id in earlier["claims"]]
    rows = evaluate(listed, {"final": final}, cfg=cfg)
    assert [r["id"] for r in rows] == ["LL-3", "LL-6"]
    for row in rows:
        assert row["measurable"] and row["falsifier"]["parts"], row["id"]
        assert {part["n_seeds"] for part in row["parts"] + row["falsifier"]["parts"]} == {len(EARLIER_SEEDS)}


def test_earlier_seeds_change_the_config_of_no_run_and_are_no_deviation(scales):
    p, cfg = registry.get(LL), scales["config"][LL]
    bare = {k: v for k, v in cfg.items() if k != "earlier_seeds"}
    for stage in p.stages:
        for run in p.runs_of(cfg) if stage.config else ():
            for task in cfg["tasks"]:  # the data stage's wildcard
                w = SimpleNamespace(run=run, seed="0", task=task, items=lambda: [])
                assert stage.config(cfg, w) == stage.config(bare, w), (stage.name, run)
    devs = deviations(glue.judged_config(cfg), scales["paper"][LL])
    assert devs and not [d for d in devs if d["key"].startswith("earlier_seeds")]


def test_earlier_seeds_errors_name_the_key_and_the_fix(scales):
    p, config = registry.get(LL), copy.deepcopy(scales["config"])
    config[LL]["earlier_seeds"] = {"seeds": [4, 10], "claims": ["LL-3", "LL-9"], "runs_with": "task-nowhere"}
    config[LL]["fresh_seeds"] = {"seeds": [20], "claims": ["LL-3"]}
    errors = glue.earlier_seeds_errors(p, config)
    assert any(f"{LL}.earlier_seeds.seeds" in e and "[10]" in e for e in errors), errors  # the default's
    assert any(f"{LL}.earlier_seeds.claims" in e and "LL-9" in e for e in errors), errors
    assert any("LL-3 also in 'latent_lookahead.fresh_seeds'" in e for e in errors), errors
    assert any(f"{LL}.earlier_seeds.runs_with" in e and "task-nowhere" in e for e in errors), errors
    config[LL]["earlier_seeds"]["runs_with"] = ["task-nowhere", "task-maze"]  # a list: any part
    assert not [e for e in glue.earlier_seeds_errors(p, config) if "runs_with" in e]
