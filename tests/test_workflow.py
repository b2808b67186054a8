"""The Snakemake workflow as a user drives it: dry runs, lint, config errors, a real smoke run."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from replikit.core import numerics
from replikit.core.config import load_config
from replikit.papers import registry
from replikit.plan.bill import priced_stage
from replikit.reporting.report import with_deviation_text
from replikit.scoring.claims import VERDICTS
from replikit.scoring.scorecard_reference import REFERENCE, compare, machine, summarize
from tests.conftest import ROOT, SHARED, run_process
from tests.test_report import markdown_table_problems


def smk(*args: str, cwd: Path = ROOT, timeout: int = 300, nice: int = 0) -> subprocess.CompletedProcess:
    cmd = [sys.executable, "-m", "snakemake", "--snakefile", str(ROOT / "Snakefile"), *args]
    return run_process(cmd, cwd, timeout, nice)


def overlay(tmp_path: Path, extra: dict | None = None) -> Path:
    """A config file pointing the data search path at the shared datasets from any directory."""
    path = tmp_path / "overlay.yaml"
    path.write_text(yaml.safe_dump({"data": {"search_paths": [str(SHARED)]}, **(extra or {})}))
    return path


@pytest.mark.parametrize("scale", ["config.yaml", "smoke.yaml", "paper.yaml", "preflight.yaml"])
def test_dry_run_of_every_scale(scale, tmp_path):
    res = smk("-n", "--cores", "2", "--configfile", str(ROOT / "config" / scale),
              "--directory", str(tmp_path))
    assert res.returncode == 0, res.stderr[-3000:]
    out = res.stdout + res.stderr
    assert "bm_train" in out and "report" in out
    # The report's "Cost of the paper scale" (rule cost_plan, ~10 min) is planned at the paper scale
    # only (report.cost_plan: true): the default's `all` runs in one sitting without it.
    planned = re.search(r"^cost_plan\s+1$", out, re.M) is not None
    assert planned == (scale == "paper.yaml"), out[-3000:]


def test_the_cost_plan_is_its_own_target_at_the_default(tmp_path):
    res = smk("-n", "--cores", "1", "results/plan/paper_scale.json", "--configfile",
              str(ROOT / "config/config.yaml"), "--directory", str(tmp_path))
    assert res.returncode == 0, res.stderr[-3000:]
    assert re.search(r"^cost_plan\s+1$", res.stdout + res.stderr, re.M), res.stdout[-3000:]


def test_slurm_profile_dry_run(tmp_path):
    res = smk("-n", "--profile", str(ROOT / "profiles/slurm"), "--configfile",
              str(ROOT / "config/paper.yaml"), "--directory", str(tmp_path))
    assert res.returncode == 0, res.stderr[-3000:]
    assert "bm_train" in res.stdout + res.stderr


def test_slurm_jobs_ask_for_the_cpus_their_torch_is_pinned_to():
    """sbatch's --cpus-per-task is a job's `threads` unless a `cpus_per_task` resource overrides it: the
    profile sets none, or every job would get 1 CPU and run its torch threads on it (the oversubscription
    that slows torch 10-30x). Here a training job of the paper scale, whose rule takes config key
    `threads` (workflow/rules/papers.smk), under the profile's defaults."""
    from types import SimpleNamespace

    from snakemake_executor_plugin_slurm_jobstep import get_cpu_setting

    profile = yaml.safe_load((ROOT / "profiles/slurm/config.yaml").read_text())
    assert "cpus_per_task" not in profile["default-resources"]
    resources = SimpleNamespace(**profile["default-resources"], get=profile["default-resources"].get)
    paper = load_config(ROOT / "config/paper.yaml", ROOT / "workflow/schemas/config.schema.yaml")
    job = SimpleNamespace(threads=paper["threads"], resources=resources)
    assert get_cpu_setting(job, gpu=True) == f"--cpus-per-task={paper['threads']}" == "--cpus-per-task=8"


def test_lint_is_clean():
    res = smk("--lint", "--configfile", str(ROOT / "config/smoke.yaml"))
    assert res.returncode == 0, res.stdout + res.stderr
    assert "Congratulations" in res.stdout + res.stderr


@pytest.mark.parametrize("bad, key", [
    ({"benign_memorization": {"epochz": 3}}, "benign_memorization.epochz"),
    ({"benign_memorization": {"epochs": "many"}}, "benign_memorization.epochs"),
    ({"seeds": "0,1"}, "seeds"),
    ({"data": {"sources": ["ftp"]}}, "data.sources.0"),
])
def test_config_errors_stop_before_any_job(tmp_path, bad, key):
    cfg = tmp_path / "bad.yaml"
    cfg.write_text(yaml.safe_dump(bad))
    res = smk("--cores", "1", "--configfile", str(ROOT / "config/smoke.yaml"), str(cfg),
              "--directory", str(tmp_path))
    assert res.returncode != 0
    assert key in res.stderr and "invalid configuration" in res.stderr
    for tree in (tmp_path, tmp_path / "scales/smoke"):
        assert not (tree / "resources").exists() and not (tree / "results").exists()


def test_missing_data_fails_with_instructions_and_no_output(tmp_path):
    cfg = tmp_path / "nodata.yaml"
    cfg.write_text(yaml.safe_dump({"data": {"search_paths": [str(tmp_path / "empty")],
                                            "sources": ["local", "subset"]}}))
    res = smk("--cores", "1", "--configfile", str(ROOT / "config/smoke.yaml"), str(cfg),
              "--directory", str(tmp_path), "resources/data/cifar10/manifest.json")
    assert res.returncode != 0
    log = (tmp_path / "scales/smoke/logs/data/cifar10.log").read_text()
    assert "cifar-10-python.tar.gz" in log and "search_paths" in log
    assert not (tmp_path / "scales/smoke/resources/data/cifar10/tensors.pt").exists()


@pytest.mark.slow
def test_smoke_scale_end_to_end(tmp_path):
    """The CI replication: whole smoke DAG, then no-op rerun and a single-figure rebuild."""
    args = ["--configfile", str(ROOT / "config/smoke.yaml"), str(overlay(tmp_path)),
            "--directory", str(tmp_path)]
    # CI's longest path: the other tests yield it the cores (conftest.BESIDE_THE_SMOKE_DAG). With them
    # it took about 49 min on this project's machine (2026-11-29), and CI's machine runs about 20 %
    # slower; the timeout catches a hung DAG within CI's own 90-minute limit, not a slow one.
    res = smk("--cores", "2", *args, timeout=5000)
    assert res.returncode == 0, res.stderr[-5000:]
    check_smoke_run(tmp_path, args)


def check_smoke_run(tmp_path: Path, args: list[str]) -> None:
    """What test_smoke_scale_end_to_end checks of a finished smoke run in `tmp_path` (apart, so that a
    finished tree can be checked again without its 45 minutes)."""
    out = tmp_path / "scales/smoke"  # the smoke scale's own output tree (config key outdir)

    claims = json.loads((out / "results/benign_memorization/claims.json").read_text())
    assert claims["subset"] is True
    assert [c["id"] for c in claims["claims"]] == ["BM-1", "BM-2", "BM-3", "BM-4", "BM-5", "BM-6"]
    # every latent-lookahead task ran end to end: its claim rows exist (1 seed: inconclusive)
    card = json.loads((out / "results/latent_lookahead/claims.json").read_text())
    ll = {c["id"]: c for c in card["claims"]}
    for claim in ("LL-3", "LL-6"):
        labels = " ".join(p["label"] for p in ll[claim]["parts"])
        assert all(t in labels for t in ("9x9 Sudoku", "Maze", "ProsQA")), labels
        assert ll[claim]["verdict"] == "inconclusive"
    html = (out / "results/report/index.html").read_text()
    assert "CIFAR-10 subset" in html
    # the report says each thing once: each paper's deviation list and each config
    md = (out / "results/report/index.md").read_text()
    schema = ROOT / "workflow/schemas/config.schema.yaml"
    for paper in load_config(ROOT / "config/smoke.yaml", schema)["papers"]:
        card = json.loads((out / f"results/{paper}/claims.json").read_text())
        shared = bool(with_deviation_text(card)["deviations"])  # deviations every proxy row shares
        assert md.count(f"**{paper} (smoke): deviations from the paper's settings**") == shared, paper
        assert md.count(f"**{paper}**, used by ") == 1, paper
    assert html.index("smoke: ") < html.index("<h2>Claims scorecard") < html.index("forest plot")
    assert not markdown_table_problems(md)  # every table renders as GitHub renders it
    # as a person writes it (issue 37): no absolute path, no None, no Python list repr
    # (the HTML's embedded images are base64, whose letters can spell anything)
    texts = {"index.md": md, "index.html": re.sub(r"data:image/[a-z]+;base64,[A-Za-z0-9+/=]+", "", html)} | {
        f"{p}/claims.json": (out / f"results/{p}/claims.json").read_text()
        for p in load_config(ROOT / "config/smoke.yaml", schema)["papers"]}
    for name, text in texts.items():
        for bad in (str(out), str(ROOT), "/tmp/", "None", "['"):
            assert bad not in text, f"{name} holds {bad!r}"
    papers = load_config(ROOT / "config/smoke.yaml", ROOT / "workflow/schemas/config.schema.yaml")["papers"]
    for paper in papers:
        card = json.loads((out / f"results/{paper}/claims.json").read_text())
        assert card["scale"] == "smoke" and card["claims"], paper
        assert (out / f"results/report/forest/{paper}.png").stat().st_size > 10_000, paper
        for c in card["claims"]:
            assert c["verdict"] in VERDICTS and c["id"] in html, c
            # each claim links to the figures that draw its evidence, and each figure back to it
            assert c["figures"] and all(f'<a href="#fig-{paper}-{f}">' in html for f in c["figures"]), c
            assert all(f'<a href="#claim-{paper}-{c["id"]}">' in html for f in c["figures"]), c
            assert c["n_seeds"] >= 5 or c["verdict"] == "inconclusive", c  # the 5 % level needs 5 seeds
            # smoke departs from every paper's own settings, and each row says how
            assert c["fidelity"] == "proxy" and c["deviations"] and c["magnitude"], c
            # every row quotes the sentence it tests and says whether it is the paper's or ours
            assert c["source"]["quote"] and c["source"]["where"] and c["kind"] in ("paper", "hypothesis"), c
            for p in c["parts"]:
                assert c["n_seeds"] < 2 or p["ci_low"] <= p["mean"] <= p["ci_high"]
        for target in registry.get(paper).targets():
            if target.endswith(".png"):
                assert (out / target).stat().st_size > 10_000, target
                assert Path(target).stem in html, target
    assert (out / "logs/benchmarks/benign_memorization/train").is_dir()
    # every paper's training jobs log plain progress lines (no bars, no carriage returns)
    for paper in papers:
        stage = priced_stage(registry.get(paper)).name  # the stage that writes the per-run metrics
        texts = [p.read_text() for p in (out / f"logs/{paper}/{stage}").rglob("*.log")]
        assert any("[progress] " in t and "ETA" in t for t in texts), paper
        # every job computed at the pinned kernels, and its runs' provenance says so (core.numerics)
        assert texts and all(f"kernels {numerics.kernels()} on " in t for t in texts), paper
        if numerics.pinned():
            card = json.loads((out / f"results/{paper}/claims.json").read_text())
            assert {g["kernels"] for g in card["provenance"]["runs"]} == {numerics.PINNED_LEVEL}, paper
        assert not any("\r" in t for t in texts), paper
    # the verdict-drift guard: any changed verdict, or a number moved beyond the stated tolerance
    # (one reference for every CPU: the kernels are pinned, replikit.core.numerics)
    cards = [json.loads((out / f"results/{paper}/claims.json").read_text()) for paper in papers]
    reference = json.loads(REFERENCE.read_text())
    diff = compare(reference, summarize(cards))
    # on a CPU where the pins do not hold (numerics.kernels), a difference may be the CPU's, not the
    # code's: shown as an expected failure at the end of the test, never hidden, never passed as equal
    other_level = [] if numerics.pinned() else diff
    assert other_level or not diff, (
        "the smoke scorecard differs from the committed reference "
        f"({REFERENCE.relative_to(ROOT)}); if the change is deliberate, update it with "
        "`python -m replikit.scoring.scorecard_reference write results/*/claims.json` "
        f"in a commit that says why; the reference's machine: {reference.get('machine')}; "
        f"this machine: {machine()}:\n" + "\n".join(diff))

    rerun = smk("-n", "--cores", "2", *args)
    assert rerun.returncode == 0 and "Nothing to be done" in rerun.stdout + rerun.stderr

    # Each paper's figures rebuild alone: deleting one figure of every paper plans exactly one job per
    # paper, its figure rule (one dry run for all papers: each Snakemake start parses every paper's rules).
    last = {paper: [t for t in registry.get(paper).targets() if t.endswith(".png")][-1] for paper in papers}
    for figure in last.values():
        (out / figure).unlink()
    plan = smk("-n", "--cores", "2", *args, *last.values())
    stats = dict(ln.split()[:2] for ln in plan.stdout.split("Job stats:")[-1].splitlines()
                 if len(ln.split()) == 2 and ln.split()[1].isdigit())
    want = {f"{registry.get(paper).prefix}_figure": "1" for paper in papers}
    assert plan.returncode == 0 and stats == {**want, "total": str(len(papers))}, plan.stdout[-3000:]
    figure = out / "results/benign_memorization/figures/probe_per_layer.png"
    figure.unlink()
    plan = smk("-n", "--cores", "2", *args, str(figure.relative_to(out)))
    jobs = [ln.split()[0] for ln in (plan.stdout).splitlines() if ln.strip().endswith(" 1")]
    assert "bm_figure" in jobs and "bm_train" not in plan.stdout.split("Job stats")[-1]
    rebuilt = smk("--cores", "2", *args)
    assert rebuilt.returncode == 0 and figure.exists()

    # Scales never touch each other's trees: the default scale and the README's single-figure
    # example (no --configfile) plan their jobs in the default tree, none in scales/smoke, and the
    # smoke report and scorecards are unchanged afterwards. The prepared datasets are shared: the
    # smoke tree's resources/data is the base tree's, so the default scale prepares none again.
    assert (out / "resources/data").is_symlink()
    assert (out / "resources/data").resolve() == (tmp_path / "resources/data").resolve()
    assert (tmp_path / "resources/data/cifar10/manifest.json").is_file()
    before = {p: p.read_bytes() for p in [*(out / "results").glob("*/claims.json"),
                                          out / "results/report/index.html"]}
    default = ["--configfile", str(ROOT / "config/config.yaml"), str(overlay(tmp_path)), "--directory",
               str(tmp_path)]
    for targets in ([], ["results/benign_memorization/figures/probe_per_layer.png"]):
        plan = smk("-n", "--cores", "2", *targets, *default)
        assert plan.returncode == 0, plan.stderr[-3000:]
        assert "scales/smoke" not in plan.stdout + plan.stderr
        # no job of rule prepare_dataset is planned (Snakemake may still note the rule's metadata)
        assert not re.search(r"^\s*(local)?rule prepare_dataset:|^prepare_dataset\s+\d+", plan.stdout, re.M)
    assert {p: p.read_bytes() for p in before} == before

    snakemake_report = tmp_path / "snakemake_report.html"
    res = smk(*args, "--report", str(snakemake_report))
    assert res.returncode == 0, res.stderr[-3000:]
    assert snakemake_report.stat().st_size > 100_000
    if other_level:
        pytest.xfail(f"this CPU computes at another kernel level ({numerics.kernels()}) than the smoke "
                     f"reference ({reference.get('machine')}), and its scorecard differs; rerun on an Intel "
                     "x86-64 CPU with AVX2 to tell a code change from the CPU:\n" + "\n".join(other_level))
