import json

import matplotlib.pyplot as plt

from replikit import plotting
from replikit.io import write_json
from replikit.report import load_inputs, render


def test_report_renders_scorecard_figures_and_provenance(root, tmp_path):
    fig_path = tmp_path / "results" / "paperx" / "figures" / "fig1.png"
    fig, ax = plotting.new_figure(1)
    ax[0, 0].plot([0, 1], [0, 1])
    plotting.save(fig, fig_path, "title", "smoke", subset=True)
    plt.close("all")
    write_json(fig_path.with_suffix(".provenance.json"), {
        "caption": "A caption.", "rule": "r", "script": "s.py", "scale": "smoke", "subset": True,
        "git_commit": "abc123", "devices": ["cpu"], "host": "h", "packages": {"torch": "2"},
        "config": {"epochs": 3}})
    claims = {"paper": "paperx", "scale": "smoke", "subset": True, "data_source": "subset:x",
              "claims": [{"id": "X-1", "statement": "Things work.", "paper_value": "1.0",
                          "paper_source": "Table 1", "statistic": "s", "rule": "CI > 0",
                          "verdict": "not replicated", "n_seeds": 3, "note": "",
                          "parts": [{"label": "gap", "mean": -0.1, "ci_low": -0.2, "ci_high": -0.05,
                                     "threshold": 0.0, "direction": "above",
                                     "verdict": "not replicated"}]}]}
    write_json(tmp_path / "claims.json", claims)
    write_json(tmp_path / "bench.json", {"device": "cpu", "batch_size": 4, "steps": 2, "model": {},
                                         "bare_images_per_s": 100.0, "ratio_loop_no_aug_to_bare": 0.9})
    inputs = load_inputs([str(tmp_path / "claims.json")], [str(fig_path)], [str(tmp_path / "bench.json")])
    html, md = tmp_path / "report" / "index.html", tmp_path / "report" / "index.md"
    render(str(root / "reports"), inputs, str(html), str(md))
    page = html.read_text()
    assert "X-1" in page and "not replicated" in page and "data:image/png;base64," in page
    assert "abc123" in page and "CIFAR-10 subset" in page and "A caption." in page
    text = md.read_text()
    assert "| paperx | X-1 |" in text and "-0.100 [-0.200, -0.050]" in text
    assert "../paperx/figures/fig1.png" in text
    assert "bare_images_per_s" in page and "100" in page
    assert "| ratio_loop_no_aug_to_bare | `0.9` |" in text
    json.loads(json.dumps(inputs["benchmarks"]))
