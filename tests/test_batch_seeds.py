"""Config key `batch_seeds` (CI's smoke scale): one stage job per run runs all the paper's seeds in
turn, each as its own job would (glue.StageRule, glue.seed_jobs); each set of fresh or earlier seeds
gets one such job per run. That a batched job's numbers equal the per-seed jobs' is what CI's smoke run
checks against the committed reference, which per-seed jobs made."""

from __future__ import annotations

import json
import re
from pathlib import Path
from types import SimpleNamespace

from replikit.core.config import load_config
from replikit.papers import glue, registry
from tests.conftest import ROOT
from tests.test_workflow import overlay, smk

BATCHED = {"batch_seeds": True}


def stage(paper: str, name: str):
    return next(s for s in registry.get(paper).stages if s.name == name)


def test_without_the_key_every_stage_keeps_one_job_per_seed():
    paper = registry.get("benign_memorization")
    for s in paper.stages:
        (rule,) = glue.stage_rules(paper, s, {}, [0, 1], [])
        assert rule.seeds is None and rule.name == f"bm_{s.name}" and rule.outputs() == s.outputs


def test_a_batched_rule_lists_each_seeds_outputs_and_logs_once_per_run():
    paper = registry.get("benign_memorization")
    (rule,) = glue.stage_rules(paper, stage("benign_memorization", "train"), BATCHED, [3, 4], [])
    assert rule.seeds == (3, 4) and rule.name == "bm_train"
    outs = rule.outputs()
    assert all(len(v) == 2 and "seed3" in v[0] and "seed4" in v[1] for v in outs.values())
    assert rule.log("benign_memorization") == "benign_memorization/train/{run}/seeds"
    params = rule.params({"dummy": 1})
    assert params["seeds"] == [3, 4]
    w = SimpleNamespace(run="r", items=lambda: {"run": "r"}.items())
    assert params["scratch"](w) == [s.replace("{run}", "r").replace("{seed}", str(k))
                                    for k, s in ((3, stage("benign_memorization", "train").scratch),
                                                 (4, stage("benign_memorization", "train").scratch))]


def test_a_list_batches_the_papers_it_names_only():
    listed = {"batch_seeds": ["benign_memorization"]}
    bm, ih = registry.get("benign_memorization"), registry.get("induction_heads")
    (rule,) = glue.stage_rules(bm, stage("benign_memorization", "train"), listed, [3, 4], [])
    assert rule.seeds == (3, 4)
    (rule,) = glue.stage_rules(ih, stage("induction_heads", "train"), listed, [3, 4], [])
    assert rule.seeds is None


def test_a_stage_without_seeds_is_not_batched():
    paper = registry.get("benign_memorization")
    (rule,) = glue.stage_rules(paper, stage("benign_memorization", "benchmark_training_loop"), BATCHED,
                               [0, 1], [])
    assert rule.seeds is None


def test_each_fresh_and_earlier_seed_set_gets_one_batched_job_per_run():
    paper = registry.get("depthwise_transfer")
    extra = glue.extra_seeds([{"seeds": [10, 11], "claims": []}], {"seeds": [0, 11, 20], "claims": []})
    assert extra == [[10, 11], [0, 11, 20]]
    train = stage("depthwise_transfer", "train")
    own, fresh, earlier = glue.stage_rules(paper, train, BATCHED, [0, 1], extra)
    assert own.seeds == (0, 1) and own.name == "dt_train"
    assert fresh.name == "dt_train_seeds10" and fresh.seeds == (10, 11)
    assert earlier.name == "dt_train_seeds20" and earlier.seeds == (20,)  # 0 and 11 run already
    assert fresh.log("depthwise_transfer").endswith("/seeds10-11")
    assert all(len(v) == 2 and "seed10" in v[0] and "seed11" in v[1] for v in fresh.outputs().values())
    assert glue.stage_rules(paper, train, BATCHED, [0, 1], [[0, 1]]) == [own]


def test_merged_inputs_keep_each_path_once_in_seed_order():
    merged = glue.merged_inputs([{"tensors": "t.pt", "model": "s0/model.pt"},
                                 {"tensors": "t.pt", "model": "s1/model.pt"}, {"runs": ["a", "b"]}])
    assert merged == {"tensors": ["t.pt"], "model": ["s0/model.pt", "s1/model.pt"], "runs": ["a", "b"]}


def test_each_seed_of_a_batched_job_gets_its_own_inputs_outputs_and_scratch():
    """benign memorization's layer probe reads the model of its own seed."""
    cfg = {"dataset": "cifar10"}
    probe = stage("benign_memorization", "probe_layers")
    rule = glue.StageRule("bm_probe_layers", probe, (0, 1))
    wild = {"run": "r"}
    sm = SimpleNamespace(
        log=["logs/benign_memorization/probe_layers/r/seeds.log"], config={"benign_memorization": cfg},
        output={k: v for k, v in rule.outputs().items()},
        params=SimpleNamespace(cfg={"c": 1}, get=lambda k: None), rule="bm_probe_layers",
        wildcards=SimpleNamespace(items=lambda: wild.items()))
    sm.output = {k: [p.replace("{run}", "r") for p in v] for k, v in sm.output.items()}
    jobs = glue.seed_jobs(sm, probe, "cpu", [0, 1])
    assert [j.wildcards for j in jobs] == [{"run": "r", "seed": "0"}, {"run": "r", "seed": "1"}]
    assert [j.input["model"] for j in jobs] == [probe.inputs(cfg, SimpleNamespace(run="r", seed=s))["model"]
                                                for s in ("0", "1")]
    assert all(f"seed{i}" in j.output["layers"] for i, j in enumerate(jobs))
    assert all(j.cfg == {"c": 1} and j.scratch is None and j.rule == "bm_probe_layers" for j in jobs)


def test_the_smoke_dag_batches_its_seeds_and_keeps_fresh_seeds_apart(tmp_path):
    """A dry run of the smoke scale with fresh seeds for depthwise transfer: one dt_train job per run
    for seeds 0-4, one per run for the fresh set, and no rule ambiguous."""
    extra = {"depthwise_transfer": {"fresh_seeds": {"seeds": [10], "claims": ["DT-1"]}}}
    res = smk("-n", "--quiet", "rules", "--configfile", str(ROOT / "config/smoke.yaml"),
              str(overlay(tmp_path, extra)), "--directory", str(tmp_path), timeout=600)
    assert res.returncode == 0, res.stdout + res.stderr
    cfg = load_config(ROOT / "config/smoke.yaml", ROOT / "workflow/schemas/config.schema.yaml")
    assert cfg["batch_seeds"] is True
    counts = {k: int(v) for k, v in re.findall(r"^(\w+)\s+(\d+)$", res.stdout, re.M)}
    assert counts["dt_train"] == len(registry.get("depthwise_transfer").runs_of(cfg["depthwise_transfer"]))
    assert 1 <= counts["dt_train_seeds10"] <= counts["dt_train"]  # the runs the claims read, at seed 10


class _Params(SimpleNamespace):
    def get(self, key, default=None):
        return getattr(self, key, default)


def _sm(tmp_path, log: str, wildcards: dict, output: dict, params: _Params, cfg: dict) -> SimpleNamespace:
    return SimpleNamespace(log=[str(tmp_path / log)], config={"rank_collapse": cfg}, output=output,
                           params=params, rule="rc_train", input={},
                           wildcards=SimpleNamespace(items=lambda: wildcards.items()))


def test_a_batched_job_writes_what_each_seeds_own_job_writes(tmp_path):
    """Rank collapse's training pair at two seeds: one batched job against two per-seed jobs, the
    written records equal but for when and where they ran."""
    import torch

    from replikit.papers import rank_collapse as rc
    from tests.test_rank_collapse import TINY

    train = stage("rank_collapse", "train")
    run = "train_norm-post_scaling-1_d_k-none_depth-2"
    cfg = rc.run_config(TINY, run)
    path = train.outputs["metrics"].replace("{run}", run)
    torch.set_num_threads(1)
    for seed in (0, 1):
        out = {"metrics": str(tmp_path / "single" / path.replace("{seed}", str(seed)))}
        glue.run_stage(_sm(tmp_path, f"logs/rank_collapse/train/{run}/seed{seed}.log",
                           {"run": run, "seed": str(seed)}, out, _Params(cfg=cfg), TINY), torch.device("cpu"))
    batched = {"metrics": [str(tmp_path / "batched" / path.replace("{seed}", str(s))) for s in (0, 1)]}
    glue.run_stage(_sm(tmp_path, f"logs/rank_collapse/train/{run}/seeds.log", {"run": run}, batched,
                       _Params(cfg=cfg, seeds=[0, 1]), TINY), torch.device("cpu"))

    def record(p: str) -> dict:
        when = ("computed_by", "elapsed_s")
        return {k: v for k, v in json.loads(Path(p).read_text()).items() if k not in when}

    for seed, p in enumerate(batched["metrics"]):
        own = record(p.replace("/batched/", "/single/"))
        assert record(p) == own and own["seed"] == seed and own["history"]
