"""The paper interface (replikit.papers.interface): every paper declares the same things, and the
workflow's rules come from those declarations alone."""

from __future__ import annotations

import copy
import dataclasses
import re
import subprocess
import sys
from types import SimpleNamespace

import pytest

from replikit.config import load_config
from replikit.papers import PAPERS as LIST
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
    with pytest.raises(KeyError, match="no paper named 'nope'.*PAPERS in src/replikit/papers/__init__.py"):
        interface.get("nope")
    assert interface.for_rule("cp_sample")[0].name == "cold_posterior"
    assert interface.for_rule("bm_probe_layers")[1] == "probe_layers"
    bm = interface.get("benign_memorization")
    assert interface.stage_for_rule("bm_probe_layers") is bm.stage("probe_layers")
    with pytest.raises(KeyError, match="rule 'xx_train' belongs to no declared paper"):
        interface.for_rule("xx_train")
    assert interface.unlisted() == []


@pytest.mark.parametrize("name", PAPERS)
def test_every_paper_keeps_the_rules_of_the_interface(name):
    assert interface.declaration_errors(interface.get(name)) == []


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
    targets = paper.targets()
    assert f"results/{name}/claims.json" in targets
    assert all(f"results/{name}/figures/{f}.png" in targets for f in figures)
    ids = [c.id for c in paper.claims(runs, cfg)]
    assert ids and len(set(ids)) == len(ids), "the claims have distinct ids"


@pytest.mark.parametrize("name", PAPERS)
def test_stage_inputs_params_and_resources_resolve(name):
    paper, cfg = interface.get(name), SCALES["smoke"][name]
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


def _bumped(value):
    """`value` with its first whole number (itself, or the first such entry of a block) plus one;
    None where it has none."""
    if isinstance(value, int) and not isinstance(value, bool):
        return value + 1
    if isinstance(value, dict):
        for k, v in value.items():
            if (b := _bumped(v)) is not None:
                return {**value, k: b}
    return None


@pytest.mark.parametrize("name", PAPERS)
def test_editing_a_figure_only_key_changes_no_training_config(name):
    """The paper's `retrain_free_edit` (a key that only changes which figures/claims exist) changes
    the config of no run that exists under both settings, so Snakemake retrains nothing."""
    paper, cfg = interface.get(name), SCALES["smoke"][name]
    assert paper.retrain_free_edit, f"{name}: declare Paper(retrain_free_edit=(key, value))"
    key, value = paper.retrain_free_edit
    edited = copy.deepcopy(cfg)
    edited[key] = value if not isinstance(value, dict) else {**cfg.get(key, {}), **value}
    train = next(s for s in paper.stages if "{run}" in next(iter(s.outputs.values())))
    shared = set(paper.runs_of(cfg)) & set(paper.runs_of(edited))
    assert shared
    for run in shared:
        w = wildcards(run=run, seed="0")
        assert train.config(cfg, w) == train.config(edited, w), run
    # while some key of the block does define the run: changing it changes the run's config
    changed = []
    for k in cfg:
        if (b := _bumped(cfg[k])) is None:
            continue
        try:
            changed += [k] if train.config({**cfg, k: b}, w) != train.config(cfg, w) else []
        except (KeyError, ValueError, TypeError):  # an edit the run spec rejects: not this check's business
            continue
    assert changed, f"{name}: no config key changes the config of run {run}"


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


def test_a_job_imports_only_its_own_paper_and_what_it_uses():
    """A stage job loads its paper's run module alone (no analysis, pandas or matplotlib); a claims
    job its paper's two modules (no pyplot); neither another paper. Start-up: issue 22."""
    code = ("import sys; from replikit.papers import interface; "
            "interface.stage_for_rule('rc_train'); "
            "print(sorted(m for m in sys.modules if m.startswith('replikit.papers.'))); "
            "print([m for m in ('pandas', 'matplotlib', 'jsonschema', 'scipy') if m in sys.modules]); "
            "interface.for_rule('rc_claims'); "
            "print(sorted(m for m in sys.modules if m.startswith('replikit.papers.'))); "
            "print([m for m in ('matplotlib.pyplot', 'jsonschema', 'scipy') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == [
        "['replikit.papers.interface', 'replikit.papers.rank_collapse']", "[]",
        "['replikit.papers.interface', 'replikit.papers.rank_collapse', "
        "'replikit.papers.rank_collapse_analysis']", "[]"], out.stderr


def test_config_module_imports_no_paper():
    code = ("import sys; from replikit.config import load_config; "
            f"load_config({str(ROOT / 'config/smoke.yaml')!r}, {str(SCHEMA)!r}); "
            "print([m for m in sys.modules if m.startswith('replikit.papers')])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["[]"], out.stderr


# ---------------------------------------------------------------- rules checked at registration


def _errors(paper, papers=None, schemas=interface.SCHEMAS) -> str:
    with pytest.raises(interface.DeclarationError) as err:
        interface.check(paper, papers or LIST, schemas)
    message = str(err.value)
    assert message.startswith(f"paper {paper.name!r}") and "fix:" in message, message
    return message


RC = interface.get("rank_collapse") if "rank_collapse" in LIST else None


def test_a_prefix_with_an_underscore_is_refused():
    message = _errors(dataclasses.replace(RC, prefix="r_c"), {**LIST, "rank_collapse": "r_c"})
    assert "prefix: 'r_c' is not lowercase letters and digits" in message
    assert "text before the first '_'" in message


def test_a_prefix_another_paper_uses_is_refused():
    message = _errors(dataclasses.replace(RC, prefix="cp"), {**LIST, "rank_collapse": "cp"})
    assert "prefix: 'cp' is also the prefix of cold_posterior" in message
    assert "choose a prefix no other paper uses" in message


def test_a_paper_missing_from_the_list_or_with_another_prefix_is_refused():
    assert "name: 'rank_collapse' is not in the list of papers; fix: add 'rank_collapse': '<prefix>'" in \
        _errors(RC, {k: v for k, v in LIST.items() if k != "rank_collapse"})
    assert "prefix: 'zz' differs from the list's 'rc'" in _errors(dataclasses.replace(RC, prefix="zz"))


def test_run_files_without_a_metrics_kind_are_refused():
    files = {"results": RC.run_files["metrics"]}
    message = _errors(dataclasses.replace(RC, run_files=files, claim_reads={"results": None}))
    assert "run_files: no kind named 'metrics' (it has: results); fix: name the per-run JSON" in message
    assert "'device' key" in message


def test_stage_outputs_with_unknown_or_unconstrained_wildcards_are_refused():
    train = RC.stage("train")
    odd = dataclasses.replace(train, outputs={"metrics": "results/rc/runs/{run}/{width}/seed{seed}.json"})
    message = _errors(dataclasses.replace(RC, stages=(odd,)))
    assert "stages['train'].outputs: unknown wildcard(s) ['width']" in message
    assert "fix: use only {run}, {task}, {seed}" in message
    assert "run_files['metrics']: no stage writes" in message
    assert "stages: differ from replikit.papers.rank_collapse.STAGES" in message
    tasked = dataclasses.replace(train, outputs={"metrics": "results/rc/{task}/{run}/seed{seed}.json"})
    message = _errors(dataclasses.replace(RC, stages=(tasked,)))
    assert "stages['train'].wildcards: no constraint for wildcard(s) ['task']" in message


def test_a_missing_schema_fragment_is_named(tmp_path):
    message = _errors(RC, schemas=tmp_path)
    assert f"schema: {tmp_path / 'rank_collapse.schema.yaml'} does not exist" in message
    assert 'resources: {$ref: "#/definitions/resources", default: {}}' in message
    assert "paper 'new': its schema fragment" in " ".join(interface.unlisted({**LIST, "new": "nw"}))


def test_a_schema_fragment_without_resources_is_named(tmp_path):
    fragment = (interface.SCHEMAS / "rank_collapse.schema.yaml").read_text()
    (tmp_path / "rank_collapse.schema.yaml").write_text(
        "\n".join(line for line in fragment.splitlines() if not line.lstrip().startswith("resources:")))
    message = _errors(RC, schemas=tmp_path)
    assert "does not declare the paper's resources" in message
    assert "add under properties: resources:" in message
    (tmp_path / "extra.schema.yaml").write_text("type: object\n")
    assert any("no paper 'extra'" in e for e in interface.unlisted(schemas=tmp_path))


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
