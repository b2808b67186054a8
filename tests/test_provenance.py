"""Which code computed a result: the code hash, the run records, and the report's flag on results
computed by code that has changed since."""

import shutil
import subprocess

from replikit.core.io import write_json
from replikit.papers.registry import code_hashes, code_modules, get
from replikit.reporting import provenance
from replikit.reporting.report import load_inputs, render


def _copy_package(tmp_path):
    root = tmp_path / "replikit"
    shutil.copytree(provenance.PACKAGE_ROOT, root, ignore=shutil.ignore_patterns("__pycache__"))
    return root


def test_code_hash_follows_the_module_and_what_it_imports_only(tmp_path):
    root = _copy_package(tmp_path)
    module = "replikit.papers.rank_collapse"
    files = {p.relative_to(root).as_posix() for p in provenance.code_files(module, root)}
    assert {"papers/rank_collapse.py", "models/signal_transformer.py", "core/training.py"} <= files
    assert "papers/cold_posterior.py" not in files
    before = provenance.code_hash(module, root=root)
    other = root / "papers/cold_posterior.py"
    other.write_text(other.read_text() + "\n# x\n")
    assert provenance.code_hash(module, root=root) == before  # another paper's code: same hash
    model = root / "models/signal_transformer.py"
    model.write_text(model.read_text() + "\n# an edit to an imported module\n")
    assert provenance.code_hash(module, root=root) != before


def test_an_import_for_type_hints_only_is_not_code_that_computes_the_run(tmp_path):
    """A run module's closure leaves out `if TYPE_CHECKING:` imports (never executed): the scorecard's
    code (papers/interface.py names `Claim` in hints) can change without changing a run's code hash,
    while an import in the `else` branch, which runs, still counts."""
    root = _copy_package(tmp_path)
    for paper in ("rank_collapse", "continual_learning", "induction_heads", "latent_lookahead"):
        module = f"replikit.papers.{paper}"
        files = {p.relative_to(root).as_posix() for p in provenance.code_files(module, root)}
        assert "papers/interface.py" in files and not any(f.startswith("scoring/") for f in files), paper
    module = "replikit.papers.rank_collapse"
    before = provenance.code_hash(module, root=root)
    claims = root / "scoring/claims.py"
    claims.write_text(claims.read_text() + "\n# an edit to the verdict code\n")
    assert provenance.code_hash(module, root=root) == before
    job = root / "papers/rank_collapse.py"
    job.write_text(job.read_text() + "\nfrom typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    pass\n"
                   "else:\n    from replikit.scoring import stats  # noqa\n")
    provenance.code_files.cache_clear()  # its closure is cached per process
    assert "scoring/stats.py" in {p.relative_to(root).as_posix() for p in provenance.code_files(module, root)}


def test_a_result_of_edited_job_code_is_flagged_in_the_report(tmp_path, root):
    """Runs record their code; a job's code is edited; the report names the commit that computed
    them and the rule to rerun, and says nothing for a result of today's code."""
    pkg = _copy_package(tmp_path)
    module = "replikit.papers.rank_collapse"
    ran = {"computed_by": {**provenance.computed_by(module), "code": provenance.code_hash(module, root=pkg),
                           "module": module, "rule": "rc_train"}}
    prov = {"runs": provenance.runs_computed_by([ran, ran])}
    assert prov["runs"][0]["n_runs"] == 2
    today = {module: provenance.code_hash(module, root=pkg)}
    assert provenance.stale(prov, today) == []
    job = pkg / "papers/rank_collapse.py"
    job.write_text(job.read_text().replace("def ", "def _edited_helper():\n    pass\n\n\ndef ", 1))
    today = {module: provenance.code_hash(module, root=pkg)}
    [note] = provenance.stale(prov, today)
    commit = ran["computed_by"]["commit"][:10]
    assert f"computed at commit {commit}" in note and "--forcerun rc_train" in note

    card = {"paper": "rank_collapse", "scale": "smoke", "subset": False, "data_source": "generated",
            "seeds": [0], "claims": [], "provenance": prov}
    write_json(tmp_path / "claims.json", card)
    inputs = load_inputs([str(tmp_path / "claims.json")], [], [], [], code=today)
    html, md = tmp_path / "report/index.html", tmp_path / "report/index.md"
    render(str(root / "reports"), inputs, str(html), str(md))
    for page in (html.read_text(), md.read_text()):
        assert "Results computed by older code" in page and f"computed at commit {commit}" in page
    fresh = load_inputs([str(tmp_path / "claims.json")], [], [], [],
                        code={module: ran["computed_by"]["code"]})
    render(str(root / "reports"), fresh, str(html), str(md))
    assert "Results computed by older code" not in html.read_text()


def test_runs_without_a_code_record_are_flagged_unknown_and_commit_and_dirty_are_apart():
    [group] = provenance.runs_computed_by([{"device": "cpu"}])
    assert group["code"] is None and "unknown" in provenance.stale({"runs": [group]}, {})[0]
    state = provenance.git_state()
    assert "+dirty" not in state["commit"] and isinstance(state["dirty"], bool)


def test_every_paper_names_the_modules_that_compute_it():
    paper = get("latent_lookahead")
    assert {"replikit.papers.latent_lookahead", "replikit.papers.latent_lookahead_analysis"} <= set(
        code_modules(paper))
    assert all(len(h) == 16 for h in code_hashes([paper]).values())


def test_a_checkpoint_of_older_code_is_not_resumed(monkeypatch):
    """Checkpoint fingerprints hold the run module's code hash: after an edit, a killed job restarts
    from scratch instead of finishing with two versions of the code."""
    module = "replikit.papers.rank_collapse"
    before = provenance.run_fingerprint("run", 0, {"lr": 1}, "data", module=module)
    assert before == provenance.run_fingerprint("run", 0, {"lr": 1}, "data", module=module)
    monkeypatch.setattr(provenance, "code_hash", lambda *m, **k: "edited")
    assert provenance.run_fingerprint("run", 0, {"lr": 1}, "data", module=module) != before


def test_the_commit_is_the_code_repository_s_wherever_the_job_runs(tmp_path, monkeypatch):
    """A job runs in its output tree (with --directory, often outside the repository): the commit it
    records is still the checkout's that holds the code, never `unknown`."""
    monkeypatch.chdir(tmp_path)
    state = provenance.git_state()
    assert state["commit"] != "unknown" and len(state["commit"]) == 40


def test_code_that_git_does_not_track_or_that_has_changes_is_dirty(tmp_path):
    """A result computed by a module git does not track (a new paper's, before its first commit), or
    by one with uncommitted changes, is dirty, and names the file."""
    from replikit.reporting.provenance import code_files, uncommitted_code

    pkg = tmp_path / "src" / "replikit"
    (pkg / "papers").mkdir(parents=True)
    (pkg / "__init__.py").write_text("")
    (pkg / "papers" / "__init__.py").write_text("")
    (pkg / "papers" / "old.py").write_text("X = 1\n")
    git = ["git", "-c", "user.name=t", "-c", "user.email=t@t"]
    subprocess.run(git + ["init", "-q"], cwd=tmp_path, check=True)
    subprocess.run(git + ["add", "-A"], cwd=tmp_path, check=True)
    subprocess.run(git + ["commit", "-qm", "c"], cwd=tmp_path, check=True)
    code_files.cache_clear()
    assert uncommitted_code("replikit.papers.old", root=pkg, cwd=tmp_path) == []
    (pkg / "papers" / "new.py").write_text("from replikit.papers import old\n")
    assert uncommitted_code("replikit.papers.new", root=pkg, cwd=tmp_path) == ["src/replikit/papers/new.py"]
    (pkg / "papers" / "old.py").write_text("X = 2\n")
    assert uncommitted_code("replikit.papers.new", root=pkg, cwd=tmp_path) == [
        "src/replikit/papers/new.py", "src/replikit/papers/old.py"]
    assert uncommitted_code("replikit.papers.old", root=pkg, cwd=tmp_path / "not-a-checkout") == []
