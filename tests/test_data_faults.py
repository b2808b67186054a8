"""Bad or changed data stopped before any job (issue 86): a user's own `.npz` is prepared under a folder
keyed by its md5, so a file made again and declared again is prepared again; a declared md5 that
disagrees with the file, or a user's file in no search path, stops the run before any job, naming both
values and both fixes; a file declared `complete` is the whole dataset, never called a subset; a figure
with an empty run list is a declaration error."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import numpy as np
import pytest

from replikit.core.io import file_digest, write_json
from replikit.data import datasets, freshness, validate
from replikit.data import prepare as data
from replikit.papers import registry
from replikit.papers.interface import DeclarationError, dataset_files
from replikit.scoring.claims import SCORECARD_FORMAT
from tests.conftest import ROOT
from tests.slurm_support import blobs_data, smk, write_config
from tests.test_report import _card, _claim


def own(md5: str, complete: bool = False, sizes=(160, 64)) -> datasets.Dataset:
    return datasets.Dataset("blobs", "Blobs", sizes, subset=("blobs.npz", md5), shape=(3, 16, 16),
                            n_classes=4, complete=complete)


def remake(folder: Path, shift: int) -> str:
    """blobs.npz made again with other pixels (same shapes and labels); its new md5."""
    with np.load(folder / "blobs.npz") as z:
        arrays = {k: z[k] for k in z.files}
    arrays["x_train"] = (arrays["x_train"].astype(int) + shift).clip(0, 255).astype(np.uint8)
    np.savez(folder / "blobs.npz", **arrays)
    return file_digest(folder / "blobs.npz", "md5")


def test_a_users_file_is_prepared_under_its_md5_and_the_built_in_ones_under_their_names(tmp_path):
    md5 = blobs_data(tmp_path)["datasets"]["blobs"]["subset"][1]
    with datasets.scoped():
        datasets.register(own(md5))
        assert dataset_files("blobs")["tensors"] == f"resources/data/blobs-{md5[:12]}/tensors.pt"
        assert freshness.dataset_of_key(freshness.prepared_key("blobs")) == "blobs"
    assert dataset_files("cifar10")["tensors"] == "resources/data/cifar10/tensors.pt"  # fixed published files
    assert dataset_files("mnist")["manifest"] == "resources/data/mnist/manifest.json"


def test_a_file_made_again_under_its_old_md5_names_both_values_and_both_fixes(tmp_path):
    old = blobs_data(tmp_path)["datasets"]["blobs"]["subset"][1]
    new = remake(tmp_path, 7)
    with datasets.scoped():
        datasets.register(own(old), by="config key data.datasets.blobs")
        (error,) = freshness.errors("blobs", [str(tmp_path)], ["local", "subset"], prepared=True,
                                    declared_by=datasets.declared_by("blobs"))
    assert f"{tmp_path / 'blobs.npz'} has md5 {new}, but config key data.datasets.blobs says {old}" in error
    assert f"declare md5 {new}" in error and "replace it" in error
    with datasets.scoped():  # declared again: no error, and a new folder, so it is prepared again
        datasets.register(own(new))
        assert freshness.errors("blobs", [str(tmp_path)], ["local", "subset"], prepared=False) == []
        assert freshness.prepared_key("blobs") == f"blobs-{new[:12]}"


def test_a_users_missing_file_says_where_to_put_it_not_to_download_it(tmp_path):
    with datasets.scoped():
        datasets.register(own("0" * 32))
        (error,) = freshness.errors("blobs", [str(tmp_path)], ["local", "subset"], prepared=False)
        assert "file of your own, which no source downloads" in error and str(tmp_path) in error
        assert "download" not in error.lower().replace("no source downloads", "")
        assert freshness.errors("blobs", [str(tmp_path)], ["local", "subset"], prepared=True) == []
        with pytest.raises(data.DataError, match="file of your own, which no source downloads"):
            data.prepare("blobs", [str(tmp_path)], tmp_path / "downloads", ["local", "subset"],
                         log=lambda m: None)


def test_an_md5_is_read_once_while_the_file_is_unchanged(tmp_path):
    md5 = blobs_data(tmp_path)["datasets"]["blobs"]["subset"][1]
    cache = tmp_path / "md5.json"
    assert freshness.md5_now(tmp_path / "blobs.npz", cache) == md5
    stored = json.loads(cache.read_text())
    stored[str(tmp_path / "blobs.npz")]["md5"] = "cached"
    cache.write_text(json.dumps(stored))
    assert freshness.md5_now(tmp_path / "blobs.npz", cache) == "cached"  # size and mtime unchanged
    new = remake(tmp_path, 3)  # made again: read again
    assert new != md5 and freshness.md5_now(tmp_path / "blobs.npz", cache) == new


def test_a_complete_file_is_the_whole_dataset_and_never_called_a_subset(tmp_path):
    md5 = blobs_data(tmp_path)["datasets"]["blobs"]["subset"][1]
    with datasets.scoped():
        datasets.register(own(md5, complete=True))
        prepared = data.prepare("blobs", [str(tmp_path)], tmp_path / "downloads", ["local", "subset"],
                                log=lambda m: None)
        assert not prepared.subset and prepared.source.startswith("file:blobs.npz")
        validate.check(prepared, datasets.get("blobs"))  # sizes are the file's own counts
        manifest = data.save(prepared, tmp_path / "t.pt", tmp_path / "m.json")
        assert datasets.data_label(manifest) == ""  # no "subset" banner
        with pytest.raises(data.DataError, match="but the file holds \\[160, 64\\]"):
            validate.check(prepared, dataclasses.replace(datasets.get("blobs"), sizes=(200, 64)))


def test_a_figure_with_an_empty_run_list_is_a_declaration_error_before_any_job():
    from replikit.plan.bill import load

    paper, cfg = registry.get("benign_memorization"), load(["config/smoke.yaml"])["benign_memorization"]
    ghost = dataclasses.replace(paper, runs=dataclasses.replace(
        paper.runs, experiments=lambda c: {**paper.experiments(c), "probe_vs_epoch": []}))
    empty = "figures\\['probe_vs_epoch'\\]: .* gives it an empty run list"
    with pytest.raises(DeclarationError, match=empty):
        registry.check_experiments(ghost, cfg)


def dry_run(config: Path, tree: Path):
    return smk("-n", "--configfile", str(ROOT / "config/smoke.yaml"), str(config), "--directory", str(tree),
               timeout=600)


def test_a_stale_md5_stops_the_dry_run_before_any_job(tmp_path):
    """The whole workflow: a file made again under its old declaration stops `snakemake -n`, naming the
    key; declared again, the dry run prepares it under its new folder."""
    overlay = {"outdir": ".", "papers": ["benign_memorization"], "seeds": [0],
               "data": blobs_data(tmp_path / "store"),
               "benign_memorization": {"dataset": "blobs", "n_train": 64, "probe_fit_size": 128}}
    new = remake(tmp_path / "store", 11)
    path = write_config(tmp_path / "overlay.yaml", overlay)
    res = dry_run(path, tmp_path / "w")
    assert res.returncode != 0 and "the data is not as declared" in res.stderr + res.stdout
    assert f"has md5 {new}, but config key data.datasets.blobs says" in res.stderr + res.stdout
    assert not (tmp_path / "w/resources/data").exists() or not list((tmp_path / "w/resources/data").iterdir())
    overlay["data"]["datasets"]["blobs"]["subset"][1] = new
    path = write_config(tmp_path / "overlay.yaml", overlay)
    res = dry_run(path, tmp_path / "w")
    assert res.returncode == 0, res.stderr[-3000:]
    assert f"resources/data/blobs-{new[:12]}/tensors.pt" in res.stdout


def test_the_data_pages_example_passes_the_smoke_scales_checks(tmp_path):
    """docs/data.md's YAML, its md5 and search path filled in, plans a smoke run on the blobs file."""
    import re

    import yaml

    text = (ROOT / "docs/data.md").read_text()
    example = yaml.safe_load(re.search(r"```yaml\n(data:.*?)```", text, re.S).group(1))
    md5 = blobs_data(tmp_path / "store")["datasets"]["blobs"]["subset"][1]
    example["data"]["search_paths"] = [str(tmp_path / "store")]
    example["data"]["datasets"]["blobs"]["subset"][1] = md5
    # the tree already holds continual learning's scorecard on its own data, from an earlier call
    own = tmp_path / "w/scales/smoke/results/continual_learning/claims.json"  # the smoke scale's tree
    card = _card("continual_learning", False, "2026-12-01T10:00:00+00:00", "688b9efae291", [_claim("CL-1")])
    card["format"] = SCORECARD_FORMAT
    write_json(own, card)
    res = dry_run(write_config(tmp_path / "mine.yaml", example), tmp_path / "w")
    assert res.returncode == 0, (res.stderr + res.stdout)[-3000:]
    assert f"resources/data/blobs-{md5[:12]}/tensors.pt" in res.stdout
    assert "resources/data/mnist/" not in res.stdout
    # on blobs, each paper's figures and scorecard have a folder of their own (issue 86): the earlier
    # scorecard is no job's output, and the one report shows both datasets' sections
    for paper in ("continual_learning", "benign_memorization"):
        assert f"output: results/{paper}/on-blobs/claims.json" in res.stdout
    assert "output: results/continual_learning/claims.json" not in res.stdout
    report = res.stdout[res.stdout.index("rule report:"):]
    assert "results/continual_learning/claims.json" in report.split("output:")[0]
    assert "results/report/forest/continual_learning.png" in report
    assert "results/report/forest/continual_learning@blobs.png" in report
    assert json.loads(own.read_text()) == card  # untouched
