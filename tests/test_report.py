import json

import matplotlib.pyplot as plt

from replikit import plotting
from replikit.io import write_json
from replikit.report import load_inputs, render, verdict_table


def test_report_renders_scorecard_figures_and_provenance(root, tmp_path):
    fig_path = tmp_path / "results" / "paperx" / "figures" / "fig1.png"
    fig, ax = plotting.new_figure(1)
    ax[0, 0].plot([0, 1], [0, 1])
    plotting.save(fig, fig_path, "title", "smoke", subset=True)
    plt.close("all")
    write_json(fig_path.with_suffix(".provenance.json"), {
        "paper": "paperx", "caption": "A caption.", "rule": "r", "script": "s.py", "scale": "smoke",
        "subset": True, "git_commit": "abc123", "devices": ["cpu"], "host": "h", "packages": {"torch": "2"},
        "config": {"epochs": 3}})
    part = {"label": "gap", "per_seed": {"0": -0.1, "1": -0.15, "2": -0.05}, "mean": -0.1, "ci_low": -0.2,
            "ci_high": -0.05, "threshold": 0.0, "direction": "above", "paper_value": 0.3,
            "verdict": "not replicated", "magnitude": "smaller"}
    claim = {"id": "X-1", "statement": "Things work.", "paper_value": "1.0", "paper_source": "Table 1",
             "statistic": "s", "rule": "CI > 0", "verdict": "not replicated", "magnitude": "smaller",
             "fidelity": "proxy", "deviations": [{"key": "model.width", "ours": 8, "paper": 64}],
             "measurable": True, "caveat": "a confound", "n_seeds": 3, "ci_level": 0.9, "note": "",
             "parts": [part], "kind": "paper", "reading": "", "unverified": [],
             "source": {"quote": "Things work, we show.", "where": "X et al., abstract",
                        "abstract_only": True}}
    unmeasured = {**claim, "id": "X-2", "parts": [], "verdict": "inconclusive", "magnitude": "not measured",
                  "fidelity": "faithful", "deviations": [], "measurable": False, "caveat": "",
                  "note": "not measurable at this scale: no runs"}
    ours = {**unmeasured, "id": "X-3", "kind": "hypothesis", "reading": "the direction is ours"}
    claims = {"paper": "paperx", "scale": "smoke", "subset": True, "data_source": "subset:x",
              "claims": [claim, unmeasured, ours]}
    write_json(tmp_path / "claims.json", claims)
    write_json(tmp_path / "bench.json", {"device": "cpu", "batch_size": 4, "steps": 2, "model": {},
                                         "bare_images_per_s": 100.0, "ratio_loop_no_aug_to_bare": 0.9})
    forest = tmp_path / "report" / "forest" / "paperx.png"
    plotting.forest_plot(claims, forest)
    assert forest.stat().st_size > 1000
    inputs = load_inputs([str(tmp_path / "claims.json")], [str(fig_path)], [str(tmp_path / "bench.json")],
                         [str(forest)])
    assert inputs["counts"] == ["smoke: 2 paper claims: 0 replicated, 1 not replicated, 0 inconclusive, "
                                "1 not measured (1 faithful, 1 proxy)",
                                "smoke: 1 hypotheses (ours): 0 replicated, 0 not replicated, 0 inconclusive, "
                                "1 not measured (1 faithful)"]
    html, md = tmp_path / "report" / "index.html", tmp_path / "report" / "index.md"
    render(str(root / "reports"), inputs, str(html), str(md))
    page = html.read_text()
    assert "X-1" in page and "not replicated" in page and "data:image/png;base64," in page
    # the verdict counts and the forest plot come before the scorecard table
    first = [page.index(s) for s in ("smoke: 2 paper claims", 'alt="forest plot paperx"',
                                     "<h2>Claims scorecard")]
    assert first == sorted(first)
    groups = [page.index(s) for s in ("Faithful: the paper", "X-2", "Proxy: settings", "X-1</td>",
                                      "Hypotheses: our reading", "X-3</td>")]
    assert groups == sorted(groups)
    assert "Things work, we show." in page and "the direction is ours" in page
    assert "model.width: 8 (paper: 64)" in page and "caveat:</strong> a confound" in page
    assert "paper 0.300: smaller" in page
    assert "abc123" in page and "CIFAR-10 subset" in page and "A caption." in page
    text = md.read_text()
    assert "| paperx | X-1 |" in text and "-0.100 [-0.200, -0.050]" in text
    assert "![forest plot paperx](forest/paperx.png)" in text
    assert "| **not replicated** | smaller | proxy: model.width: 8 (paper: 64) |" in text
    assert "../paperx/figures/fig1.png" in text
    assert "bare_images_per_s" in page and "100" in page
    assert "| ratio_loop_no_aug_to_bare | `0.9` |" in text
    json.loads(json.dumps(inputs["benchmarks"]))
    table = verdict_table([claims]).splitlines()
    assert table[2] == "| X-1 | paper | not replicated | smaller | proxy | -0.100 [-0.200, -0.050] |"
    assert table[3] == ("| X-2 | paper | inconclusive | not measured | faithful | not measurable at this "
                        "scale: no runs |")
    assert table[4].startswith("| X-3 | hypothesis |")
