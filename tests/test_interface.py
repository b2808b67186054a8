"""The paper interface (replikit.papers.interface): every paper declares the same things, and the
workflow's rules come from those declarations alone."""

from __future__ import annotations

import copy
import dataclasses
import os
import re
import subprocess
import sys
from types import SimpleNamespace
from typing import ClassVar

import numpy as np
import pytest

from replikit.core.config import load_config
from replikit.papers import glue, interface, paper_names, registry
from tests.conftest import ROOT

SCHEMA = ROOT / "workflow/schemas/config.schema.yaml"
SCALES = {name: load_config(ROOT / f"config/{name}.yaml", SCHEMA) for name in ("smoke", "config", "paper")}
PAPERS = sorted(registry.registry())


def wildcards(**kw: str) -> SimpleNamespace:
    ns = SimpleNamespace(**kw)
    ns.items = lambda: kw.items()
    return ns


def test_registry_finds_every_paper_of_the_configs_with_distinct_prefixes():
    assert set(SCALES["config"]["papers"]) <= set(PAPERS) == set(paper_names())
    prefixes = [registry.get(p).prefix for p in PAPERS]
    assert len(set(prefixes)) == len(prefixes)
    with pytest.raises(KeyError, match="no paper named 'nope'.*config/papers/<name>.yaml and src/replikit"):
        registry.get("nope")
    bm = registry.get("benign_memorization")
    log = "logs/benign_memorization/probe_layers/some_run/seed0.log"
    assert registry.stage_of_job(log) is bm.stage("probe_layers")
    assert registry.stage_of_job("/abs/wd/logs/rank_collapse/train/init_x/seed1.log").name == "train"
    assert registry.stage_of_job("/home/logs/wd/logs/benign_memorization/probe_layers/r/seed1.log") \
        is bm.stage("probe_layers")
    with pytest.raises(KeyError, match="no paper named 'xx'"):
        registry.stage_of_job("logs/xx/train/a/seed0.log")
    with pytest.raises(KeyError, match="RUNS has no stage 'nope'"):
        registry.stage_of_job("logs/rank_collapse/nope/a/seed0.log")


def test_every_stage_log_names_its_paper_and_stage():
    """A stage job finds its stage from its log path alone (papers.smk writes logs/<Stage.log(paper)>)."""
    for name in PAPERS:
        for stage in registry.get(name).stages:
            log = "logs/" + stage.log(name).format(run="r", seed=0, task="t") + ".log"
            assert registry.stage_of_job(log) is stage


@pytest.mark.parametrize("name", PAPERS)
def test_every_paper_keeps_the_rules_of_the_interface(name):
    assert interface.declaration_errors(registry.get(name)) == []


@pytest.mark.parametrize("scale", sorted(SCALES))
@pytest.mark.parametrize("name", PAPERS)
def test_declaration_is_complete_and_run_names_round_trip(name, scale):
    paper, cfg = registry.get(name), SCALES[scale][name]
    assert paper.title and paper.arxiv and paper.stages and paper.figures
    figures = [f.name for f in paper.figures]
    assert len(set(figures)) == len(figures) and all(f.caption.strip() for f in paper.figures)
    runs = paper.experiments(cfg)
    assert set(runs) == set(figures), "every figure declares its runs"
    assert interface.claim_figure_errors(paper, paper.claims(runs, cfg)) == []
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
    paper, cfg = registry.get(name), SCALES["smoke"][name]
    run = paper.runs_of(cfg)[0]
    for stage in paper.stages:
        w = wildcards(run=run, seed="0", task=cfg.get("benchmark", {}).get("task", "sudoku4"))
        assert isinstance(glue.stage_inputs(stage, cfg)(w), dict)
        params = glue.stage_params(stage, cfg)
        assert set(params) == ({"cfg", "scratch"} if stage.scratch else {"cfg"})
        res = glue.stage_resources(paper, stage, cfg)
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


@pytest.mark.parametrize("name", [n for n in PAPERS if registry.get(n).retrain_free_edit])
def test_editing_a_figure_only_key_changes_no_training_config(name):
    """A paper's `retrain_free_edit` (a key that only changes which figures/claims exist; optional)
    changes the config of no run that exists under both settings, so Snakemake retrains nothing."""
    paper, cfg = registry.get(name), SCALES["smoke"][name]
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
    from replikit.core.config import read_yaml

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
    code = ("import sys; from replikit.papers import registry; "
            "registry.stage_of_job('logs/rank_collapse/train/init_x/seed0.log'); "
            "print(sorted(m for m in sys.modules if m.startswith('replikit.papers.'))); "
            "print([m for m in ('pandas', 'matplotlib', 'jsonschema', 'scipy') if m in sys.modules]); "
            "registry.get('rank_collapse'); "
            "print(sorted(m for m in sys.modules if m.startswith('replikit.papers.'))); "
            "print([m for m in ('matplotlib.pyplot', 'jsonschema', 'scipy') if m in sys.modules])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.splitlines() == [
        "['replikit.papers.interface', 'replikit.papers.rank_collapse', 'replikit.papers.registry']", "[]",
        "['replikit.papers.interface', 'replikit.papers.rank_collapse', "
        "'replikit.papers.rank_collapse_analysis', 'replikit.papers.registry']", "[]"], out.stderr


def test_config_module_imports_no_paper():
    code = ("import sys; from replikit.core.config import load_config; "
            f"load_config({str(ROOT / 'config/smoke.yaml')!r}, {str(SCHEMA)!r}); "
            "print([m for m in sys.modules if m.startswith('replikit.papers')])")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["[]"], out.stderr


# ---------------------------------------------------------------- rules checked at registration


def _errors(paper, others=None, configs=interface.CONFIGS) -> str:
    with pytest.raises(interface.DeclarationError) as err:
        registry.check(paper, others, configs)
    message = str(err.value)
    assert message.startswith(f"paper {paper.name!r}") and "fix:" in message, message
    return message


RC = registry.get("rank_collapse")


def with_runs(paper: interface.Paper, **changes) -> interface.Paper:
    """`paper` with its run side (`Paper.runs`) changed."""
    return dataclasses.replace(paper, runs=dataclasses.replace(paper.runs, **changes))


def test_a_prefix_with_an_underscore_is_refused():
    message = _errors(dataclasses.replace(RC, prefix="r_c"))
    assert "prefix: 'r_c' is not lowercase letters and digits" in message
    assert "text before the first '_'" in message


def test_a_prefix_another_paper_uses_is_refused():
    message = _errors(dataclasses.replace(RC, prefix="cp"), {"cold_posterior": "cp"})
    assert "prefix: 'cp' is also the prefix of cold_posterior" in message
    assert "declare a prefix no other paper uses" in message


def test_two_papers_with_one_prefix_cannot_be_registered_together(monkeypatch):
    monkeypatch.setattr(registry, "_REGISTRY", {"cold_posterior": dataclasses.replace(RC, prefix="rc")})
    with pytest.raises(interface.DeclarationError, match="'rc' is also the prefix of cold_posterior"):
        registry.get("rank_collapse")


def test_run_files_without_a_metrics_kind_are_refused():
    files = {"results": RC.run_files["metrics"]}
    message = _errors(dataclasses.replace(with_runs(RC, files=files), claim_reads={"results": None}))
    assert "run_files: no kind named 'metrics' (it has: results); fix: name the per-run JSON" in message
    assert "'device' key" in message


def test_stage_outputs_with_unknown_or_unconstrained_wildcards_are_refused():
    train = RC.stage("train")
    odd = dataclasses.replace(train, outputs={"metrics": "results/rc/runs/{run}/{width}/seed{seed}.json"})
    message = _errors(with_runs(RC, stages=(odd,)))
    assert "stages['train'].outputs: unknown wildcard(s) ['width']" in message
    assert "fix: use only {run}, {task}, {seed}" in message
    assert "run_files['metrics']: no stage writes" in message
    assert "runs: is not replikit.papers.rank_collapse.RUNS, whose stages a stage job runs" in message
    tasked = dataclasses.replace(train, outputs={"metrics": "results/rc/{task}/{run}/seed{seed}.json"})
    message = _errors(with_runs(RC, stages=(tasked,)))
    assert "stages['train'].wildcards: no constraint for wildcard(s) ['task']" in message


def test_a_paper_without_its_config_file_or_module_is_named(tmp_path, monkeypatch):
    message = _errors(RC, configs=tmp_path)
    assert f"name: {tmp_path / 'rank_collapse.yaml'} does not exist" in message
    assert 'resources: {$ref: "#/definitions/resources", default: {}}' in message
    monkeypatch.setattr(registry, "paper_names", lambda: ["no_module_yet"])
    with pytest.raises(interface.DeclarationError, match="config/papers/no_module_yet.yaml exists but "
                       "module replikit.papers.no_module_yet does not; fix: write src/replikit/papers/"):
        registry.get("no_module_yet")


def test_a_config_file_without_a_schema_or_its_resources_is_named(tmp_path):
    text = (interface.CONFIGS / "rank_collapse.yaml").read_text()
    (tmp_path / "rank_collapse.yaml").write_text(
        "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("resources: {$ref")))
    message = _errors(RC, configs=tmp_path)
    assert "`schema:` does not declare the paper's resources" in message
    assert "add under its properties: resources:" in message
    (tmp_path / "rank_collapse.yaml").write_text(text.split("\nschema:")[0])
    assert "no `schema:` mapping with type: object" in _errors(RC, configs=tmp_path)


def test_registry_leaves_heavy_imports_to_the_jobs_that_use_them():
    """Every job loads the registry; jsonschema, scipy.stats and seaborn (seconds of imports) load
    only in the jobs that use them, and the lazy seaborn still works once used."""
    code = ("import sys; from replikit.papers import registry; registry.registry(); "
            "heavy = ('jsonschema', 'scipy.stats', 'seaborn.relational'); "
            "print([m for m in heavy if m in sys.modules]); "
            "from replikit.reporting.plotting import sns; sns.color_palette('colorblind'); "
            "print('seaborn.relational' in sys.modules)")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.split() == ["[]", "True"], out.stderr


@dataclasses.dataclass(frozen=True)
class Sweep(interface.Run):
    kind: ClassVar[str] = "sweep"
    depth: int
    lr: float
    arm: str
    views: int | None = None
    labelled: bool = False
    tau: int | str = 0


@dataclasses.dataclass(frozen=True)
class Kinds(interface.Run):
    kind: str
    width: int


def test_the_generic_run_writes_and_parses_its_own_name():
    run = Sweep(4, 0.01, "mu_p", None, True, "A")
    assert run.name == "sweep_depth-4_lr-0.01_arm-mu_p_views-none_labelled-true_tau-A"
    assert Sweep.parse(run.name) == run and re.fullmatch(Sweep.pattern(), run.name)
    for other in (Sweep(-2, 1e-05, "x", 3, False, 7), Sweep(1, -0.5, "crop_flip_2")):
        assert Sweep.parse(other.name) == other and re.fullmatch(Sweep.pattern(), other.name)
    assert Sweep.parse("sweep_depth-1_lr-2.0_arm-a_views-none_labelled-false_tau-3").tau == 3
    assert Sweep(2, np.float64(0.1), "a").name == Sweep(2, 0.1, "a").name  # numpy's repr names its type
    assert Sweep(np.int64(2), 1, "a").name == Sweep(2, 1.0, "a").name == "sweep_depth-2_lr-1.0_arm-a_" \
        "views-none_labelled-false_tau-0"  # a whole number in a float field: one run, one name
    assert Sweep(1, 0.5, "a", tau=3).name.endswith("_tau-3")  # int | str keeps the int
    assert Kinds.parse("init_width-8") == Kinds("init", 8) and Kinds("train", 2).name == "train_width-2"
    with pytest.raises(ValueError, match="not a Sweep run name \\(sweep_depth-<depth>_lr-<lr>"):
        Sweep.parse("sweep_depth-4_lr-0.01")
    with pytest.raises(ValueError, match="lr-fast is not a float"):
        Sweep.parse("sweep_depth-1_lr-fast_arm-a_views-none_labelled-false_tau-0")
    with pytest.raises(ValueError, match="use 'sweep_depth-1_lr-2.0_"):
        Sweep.parse("sweep_depth-1_lr-2_arm-a_views-none_labelled-false_tau-0")
    with pytest.raises(ValueError, match="a value in a run name is letters, digits"):
        assert Sweep(1, 0.1, "1/sqrt(L)").name
    with pytest.raises(ValueError, match="a value in a run name"):
        assert Sweep(1, 0.1, "a_lr-2").name  # would read back as another run


def test_runs_that_are_not_a_run_dataclass_are_refused():
    message = _errors(with_runs(RC, spec=str))
    assert "runs.spec: <class 'str'> is not a dataclass subclassing Run with a kind" in message


def test_papers_are_found_from_the_workflow_folder_without_an_editable_install(tmp_path):
    """A non-editable install has no checkout above its files: the papers' config files are found
    under $REPLIKIT_WORKFLOW, which the Snakefile sets to its own folder for itself and every job."""
    (tmp_path / "config" / "papers").mkdir(parents=True)
    for name in ("alpha", "beta"):
        (tmp_path / "config" / "papers" / f"{name}.yaml").write_text("smoke: {}\n")
    code = "from replikit.papers import CONFIGS, paper_names; print(CONFIGS, paper_names())"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                         env={**os.environ, "REPLIKIT_WORKFLOW": str(tmp_path)}).stdout
    assert out.strip() == f"{tmp_path / 'config' / 'papers'} ['alpha', 'beta']"
    assert "use_workflow(workflow.basedir)" in (ROOT / "Snakefile").read_text()


def test_no_declaration_is_a_lambda_so_provenance_names_its_function():
    """The scorecard's provenance names the claims function: never `<lambda>`."""
    for name in paper_names():
        assert registry.get(name).claims.__name__ != "<lambda>", name


def test_a_claim_without_figures_or_with_an_unknown_figure_is_named():
    paper = registry.get("rank_collapse")
    cfg = SCALES["smoke"]["rank_collapse"]
    claims = paper.claims(paper.experiments(cfg), cfg)
    bad = [dataclasses.replace(claims[0], figures=()), dataclasses.replace(claims[1], figures=("nope",))]
    errors = interface.claim_figure_errors(paper, bad)
    assert len(errors) == 2
    assert errors[0].startswith(f"claim {claims[0].id} names no figure; fix:")
    assert f"claim {claims[1].id} names figure 'nope'" in errors[1] and "similarity_vs_depth" in errors[1]


def test_a_field_omitted_at_its_default_renames_no_run_and_parses_either_way():
    """A field declared with OMITTED_AT_DEFAULT is out of the name at its default (existing runs keep
    their names) and in it otherwise; a value that ends in the field's key never swallows it."""
    import dataclasses
    from typing import ClassVar

    from replikit.papers.interface import OMITTED_AT_DEFAULT, Run

    @dataclasses.dataclass(frozen=True)
    class Sweep(Run):
        kind: ClassVar[str] = "sweep"
        depth: int
        tag: str
        dataset: str | None = dataclasses.field(default=None, metadata=OMITTED_AT_DEFAULT)

    assert Sweep(4, "a_b").name == "sweep_depth-4_tag-a_b"
    assert Sweep(4, "a_b", "blobs").name == "sweep_depth-4_tag-a_b_dataset-blobs"
    for run in (Sweep(4, "a_b"), Sweep(4, "a_b", "blobs")):
        assert Sweep.parse(run.name) == run and re.fullmatch(Sweep.pattern(), run.name)
    with pytest.raises(ValueError, match="canonical"):
        Sweep.parse("sweep_depth-4_tag-a_dataset-none")  # the default is written by leaving it out
