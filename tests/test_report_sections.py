"""Outputs keyed by dataset, and one report across calls (issue 86): a paper on a dataset other than
its block's own writes its figures and scorecard under results/<paper>/on-<dataset>/, never over the
paper's own; the report shows every scorecard in the tree, those an earlier call made marked as such,
so that two datasets share one report and a call of one paper replaces only its own section."""

from __future__ import annotations

import json
from pathlib import Path

import matplotlib.pyplot as plt

from replikit.core.io import write_json
from replikit.papers import continual_learning as cl
from replikit.papers import registry
from replikit.papers.glue import results_dir
from replikit.reporting import plotting
from replikit.reporting.report import earlier_sections, load_inputs, render, section_figures, section_in_tree
from replikit.scoring.claims import SCORECARD_FORMAT
from tests.test_report import _card, _claim, _small_figure


def test_a_paper_on_another_dataset_writes_its_figures_and_scorecard_in_a_folder_of_their_own():
    paper = registry.get("continual_learning")
    own = {"scale": "smoke", "continual_learning": {"stream": "pmnist"}}
    other = {"scale": "smoke", "continual_learning": {"stream": "pmnist", "dataset": "blobs"}}
    assert results_dir(own, paper) == "results/continual_learning"  # published trees keep their paths
    assert results_dir(other, paper) == "results/continual_learning/on-blobs"
    assert paper.targets(results_dir(other, paper))[-1] == "results/continual_learning/on-blobs/claims.json"
    # a ladder rung's tree is its own: a rung that walks to the paper's dataset keeps the paper's folder
    rung = {"scale": "default", "ladder_rung": "split_cifar10",
            "continual_learning": {"stream": "split_cifar10"}}
    assert results_dir(rung, paper) == "results/continual_learning"
    # a paper that reads no dataset keeps one folder
    assert results_dir({"scale": "smoke", "induction_heads": {}}, registry.get("induction_heads")) \
        == "results/induction_heads"


def test_the_stream_deviation_names_the_data_it_permutes():
    assert cl.shown_settings({"stream": "pmnist"})["stream"] == "pmnist"  # the paper's own data: as set
    assert cl.shown_settings({"stream": "pmnist", "dataset": "mnist"})["stream"] == "pmnist"
    assert cl.shown_settings({"stream": "pmnist", "dataset": "blobs"})["stream"] == "permuted blobs"
    assert cl.shown_settings({"stream": "split_cifar10", "dataset": "blobs"})["stream"] == "split blobs"


def test_one_report_shows_two_datasets_of_a_paper_and_marks_an_earlier_calls_section(root, tmp_path):
    results = tmp_path / "results"
    sha = "688b9efae291b214a44c2f28e2ad1a989eca9852"
    own = results / "papera" / "claims.json"  # this call's: the paper on its own data
    blobs = results / "papera" / "on-blobs" / "claims.json"  # an earlier call's, on blobs
    for path, day in ((own, "2026-11-28"), (blobs, "2026-11-27")):
        rows = [_claim("A-1", figures=["fig"])]
        write_json(path, {**_card("papera", False, f"{day}T10:00:00+00:00", sha, rows),
                          "format": SCORECARD_FORMAT})
    # left out, not fatal: an unreadable file, an older format's scorecard, another scale's
    (results / "broken").mkdir()
    (results / "broken" / "claims.json").write_text("{not json")
    write_json(results / "paperb" / "claims.json", _card("paperb", False, "2026-11-01", sha, []))
    other_scale = {**_card("paperc", False, "2026-11-01", sha, []), "format": SCORECARD_FORMAT,
                   "scale": "default"}
    write_json(results / "paperc" / "on-blobs" / "claims.json", other_scale)

    earlier = earlier_sections([str(own)], results, scale="smoke")
    assert earlier == [blobs.as_posix()]
    _small_figure(results, "papera", "fig", False, folder="papera/on-blobs")
    figures = [_small_figure(results, "papera", "fig", False), *section_figures(earlier)]
    assert figures[1].endswith("papera/on-blobs/figures/fig.png")
    shown = [str(own), *earlier]
    forests = [str(results / "report" / "forest" / f"{section_in_tree(c)}.png") for c in shown]
    assert [Path(f).name for f in forests] == ["papera.png", "papera@blobs.png"]
    for c, f in zip(shown, forests, strict=True):
        plotting.forest_plot(json.loads(Path(c).read_text()), f)
    plt.close("all")

    inputs = load_inputs(shown, figures, [], forests, earlier=earlier)
    html, md = results / "report" / "index.html", results / "report" / "index.md"
    render(str(root / "reports"), inputs, str(html), str(md))
    text, page = md.read_text(), html.read_text()
    assert text.startswith("# Replications of 1 paper — smoke scale")  # one paper, two sections
    assert "**Paper papera — on dataset blobs**" in text and "**Paper papera**:" in text
    line = next(ln for ln in text.splitlines() if "on dataset blobs" in ln)
    assert "from an earlier call, 2026-11-27: this call did not make it" in line
    assert "from an earlier call" not in next(ln for ln in text.splitlines() if "**Paper papera**:" in ln)
    # each section's rows, figures and anchors are its own
    assert 'id="claim-papera-A-1"' in page and 'id="claim-papera@blobs-A-1"' in page
    assert "(../papera/figures/fig.png)" in text and "(../papera/on-blobs/figures/fig.png)" in text
    assert "### papera@blobs / fig" in text and "[A-1](#claim-papera@blobs-A-1)" in text
