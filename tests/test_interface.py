"""The paper interface (replikit.papers.interface): every paper declares the same things, and the
workflow's rules come from those declarations alone."""

from __future__ import annotations

import copy
import re
import subprocess
import sys
from types import SimpleNamespace

import pytest

from replikit.config import load_config
from replikit.papers import interface
from tests.conftest import ROOT

SCHEMA = ROOT / "workflow/schemas/config.schema.yaml"
SCALES = {name: load_config(ROOT / f"config/{name}.yaml", SCHEMA) for name in ("smoke", "config", "paper")}
PAPERS = sorted(interface.registry())


def wildcards(**kw: str) -> SimpleNamespace:
    ns = SimpleNamespace(**kw)
    ns.items = lambda: kw.items()
    return ns


def test_registry_finds_every_paper_of_the_configs_with_distinct_prefixes():
    assert set(SCALES["config"]["papers"]) <= set(PAPERS)
    prefixes = [interface.get(p).prefix for p in PAPERS]
    assert len(set(prefixes)) == len(prefixes)
    assert interface.rule_prefixes()["cl"] == "continual_learning"
    with pytest.raises(KeyError, match="no paper named 'nope'"):
        interface.get("nope")
    assert interface.for_rule("cp_sample")[0].name == "cold_posterior"
    assert interface.for_rule("bm_probe_layers")[1] == "probe_layers"


@pytest.mark.parametrize("scale", sorted(SCALES))
@pytest.mark.parametrize("name", PAPERS)
def test_declaration_is_complete_and_run_names_round_trip(name, scale):
    paper, cfg = interface.get(name), SCALES[scale][name]
    assert paper.title and paper.arxiv and paper.stages and paper.figures
    figures = [f.name for f in paper.figures]
    assert len(set(figures)) == len(figures) and all(f.caption.strip() for f in paper.figures)
    runs = paper.experiments(cfg)
    assert set(runs) == set(figures), "every figure declares its runs"
    for spec in (s for specs in runs.values() for s in specs):
        assert re.fullmatch(paper.run_pattern, spec.name), spec.name
        assert paper.run_spec.parse(spec.name).name == spec.name
    for kind, figure in paper.claim_reads.items():
        assert kind in paper.run_files and (figure is None or figure in figures)
    for fig in paper.figures:
        assert fig.reads in paper.run_files
    targets = paper.targets()
    assert f"results/{name}/claims.json" in targets
    assert all(f"results/{name}/figures/{f}.png" in targets for f in figures)
    assert len(paper.claims(runs, cfg)) >= 4


@pytest.mark.parametrize("name", PAPERS)
def test_every_run_file_is_made_by_one_stage_and_stage_inputs_resolve(name):
    paper, cfg = interface.get(name), SCALES["smoke"][name]
    made = [p for s in paper.stages for p in s.outputs.values()]
    assert all(p in made for p in paper.run_files.values())
    run = paper.runs_of(cfg)[0]
    for stage in paper.stages:
        w = wildcards(run=run, seed="0", task=cfg.get("benchmark", {}).get("task", "sudoku4"))
        assert isinstance(interface.stage_inputs(stage, cfg)(w), dict)
        params = interface.stage_params(stage, cfg)
        assert set(params) == ({"cfg", "scratch"} if stage.scratch else {"cfg"})
        res = interface.stage_resources(paper, stage, cfg)
        assert res["runtime"] == (stage.runtime or cfg["resources"]["runtime"]) and res["mem_mb"] > 0
        assert ("gpu" in res) == stage.gpu
        assert stage.log(name).startswith(f"{name}/{stage.name}/")


# A key that only changes which figures/claims exist, per paper: editing it must not change the
# config of any run that exists under both settings (so Snakemake retrains nothing).
FIGURE_ONLY_EDITS = {
    "benign_memorization": ("capacity", {"n_augs": [1, 2]}),
    "cold_posterior": ("curation", {"annotators": [1, 2]}),
    "continual_learning": ("cl2_tolerance", 0.123),
    "latent_lookahead": ("tau_scaling", {"task": "sudoku4", "taus": [1, 3]}),
    "rank_collapse": ("dk_sweep", {"d_ks": [8, 64]}),
}


@pytest.mark.parametrize("name", PAPERS)
def test_editing_a_figure_only_key_changes_no_training_config(name):
    assert name in FIGURE_ONLY_EDITS, f"{name}: declare a figure-only edit in FIGURE_ONLY_EDITS"
    paper, cfg = interface.get(name), SCALES["smoke"][name]
    key, value = FIGURE_ONLY_EDITS[name]
    edited = copy.deepcopy(cfg)
    edited[key] = value if not isinstance(value, dict) else {**cfg.get(key, {}), **value}
    train = next(s for s in paper.stages if "{run}" in next(iter(s.outputs.values())))
    shared = set(paper.runs_of(cfg)) & set(paper.runs_of(edited))
    assert shared
    for run in shared:
        w = wildcards(run=run, seed="0")
        assert train.config(cfg, w) == train.config(edited, w), run
    # while a key that defines the run does change it
    key = next(k for k in ("epochs", "model") if k in cfg and k in train.config(cfg, w))
    retrained = copy.deepcopy(cfg)
    if isinstance(cfg[key], dict):  # a model setting: its first whole-number entry
        leaf = next(k for k, v in cfg[key].items() if isinstance(v, int) and not isinstance(v, bool))
        retrained[key][leaf] += 1
    else:
        retrained[key] += 1
    assert train.config(retrained, w) != train.config(cfg, w)


def test_paper_settings_keep_their_files_key_order():
    """Snakemake compares a job's params as text, so reordered keys would retrain finished runs."""
    from replikit.config import read_yaml

    for name in PAPERS:
        block = read_yaml(ROOT / f"config/papers/{name}.yaml")["smoke"]
        cfg = SCALES["smoke"][name]
        for key, value in block.items():
            assert list(cfg)[: len(block)] == list(block), name
            if isinstance(value, dict):
                assert list(cfg[key])[: len(value)] == list(value), (name, key)


def test_registry_leaves_heavy_imports_to_the_jobs_that_use_them():
    """Every job loads the registry; jsonschema, scipy.stats and seaborn (seconds of imports) load
    only in the jobs that use them, and the lazy seaborn still works once used."""
    code = ("import sys; from replikit.papers import interface; interface.registry(); "
            "heavy = ('jsonschema', 'scipy.stats', 'seaborn.relational'); "
            "print([m for m in heavy if m in sys.modules]); "
            "from replikit.plotting import sns; sns.color_palette('colorblind'); "
            "print('seaborn.relational' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["[]", "True"], out.stderr
