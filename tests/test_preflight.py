"""The preflight: config/preflight.yaml from data to report (its own file, so that pytest-xdist can
run it beside the smoke DAG of test_workflow.py; see tests/conftest.py)."""

from __future__ import annotations

import json

import pytest

from replikit.core.config import load_config
from tests.conftest import BESIDE_THE_SMOKE_DAG, ROOT
from tests.test_workflow import overlay, smk


@pytest.mark.slow
@pytest.mark.preflight
def test_preflight_runs_every_paper_setting_from_data_to_report(tmp_path):
    """config/preflight.yaml: the paper-scale models and pipelines with budgets cut, on the CPU. Every
    row is labelled preflight and is inconclusive by design; the report says so at its top."""
    args = ["--configfile", str(ROOT / "config/preflight.yaml"), str(overlay(tmp_path)),
            "--directory", str(tmp_path)]
    res = smk("--cores", "2", *args, timeout=3000, nice=BESIDE_THE_SMOKE_DAG)
    assert res.returncode == 0, res.stderr[-5000:]
    cfg = load_config(ROOT / "config/preflight.yaml", ROOT / "workflow/schemas/config.schema.yaml")
    for paper in cfg["papers"]:
        card = json.loads((tmp_path / f"scales/preflight/results/{paper}/claims.json").read_text())
        assert card["scale"] == "preflight" and card["claims"], paper
        for c in card["claims"]:
            assert c["fidelity"] == "preflight" and c["verdict"] == "inconclusive", c
    html = (tmp_path / "scales/preflight/results/report/index.html").read_text()
    assert html.index("Preflight:") < html.index("<h2>Claims scorecard")
