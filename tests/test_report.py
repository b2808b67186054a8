import json
import re
from html import unescape

import matplotlib.pyplot as plt

from replikit.core.io import write_json
from replikit.reporting import plotting
from replikit.reporting.report import load_inputs, render, verdict_table

VERDICT_WORDS = {"replicated", "not replicated", "inconclusive", "not measured"}


def markdown_table_problems(md: str) -> list[str]:
    """Every Markdown table of `md`, parsed as GitHub renders it (markdown-it-py, tables on): each
    row has its header's number of cells in the source (an unescaped `|` would split one, and the
    renderer would silently drop or pad cells), and a scorecard row's direction column holds a verdict
    (marked "(fragile)" where a part is)."""
    from markdown_it import MarkdownIt

    problems = []
    cells = lambda line: len(re.split(r"(?<!\\)\|", line.strip())) - 2  # noqa: E731
    lines = md.splitlines()
    header, row, col, in_head = [], [], None, False
    for t in MarkdownIt("commonmark").enable("table").parse(md):
        if t.type == "table_open":
            header, col = [], None
            first = lines[t.map[0]]
            problems += [f"row of {cells(ln)} cells under a {cells(first)}-cell header: {ln[:80]}"
                         for ln in lines[t.map[0] + 2:t.map[1]] if cells(ln) != cells(first)]
        elif t.type in ("thead_open", "thead_close"):
            in_head = t.type == "thead_open"
            col = header.index("direction") if not in_head and "direction" in header else col
        elif t.type == "tr_open":
            row = []
        elif t.type == "inline":
            (header if in_head else row).append(t.content.strip("* "))
        elif t.type == "tr_close" and not in_head and col is not None \
                and row[col].removesuffix(" (fragile)").strip("* ") not in VERDICT_WORDS:
            problems.append(f"direction cell {row[col]!r} is not a verdict: {row[:2]}")
    return problems


def test_report_renders_scorecard_figures_and_provenance(root, tmp_path):
    fig_path = tmp_path / "results" / "paperx" / "figures" / "fig1.png"
    fig, ax = plotting.new_figure(1)
    ax[0, 0].plot([0, 1], [0, 1])
    plotting.save(fig, fig_path, "title", "smoke", subset=True)
    plt.close("all")
    write_json(fig_path.with_suffix(".provenance.json"), {
        "paper": "paperx", "caption": "A caption.", "rule": "r", "script": "s.py", "scale": "smoke",
        "subset": True, "subset_title": "CIFAR-10 subset", "git_commit": "abc123", "devices": ["cpu"],
        "host": "h", "packages": {"torch": "2"}, "config": {"epochs": 3}})
    part = {"label": "gap", "per_seed": {"0": -0.1, "1": -0.15, "2": -0.05}, "mean": -0.1, "ci_low": -0.2,
            "ci_high": -0.05, "threshold": 0.0, "direction": "above", "paper_value": 0.3,
            "verdict": "not replicated", "magnitude": "smaller"}
    claim = {"id": "X-1", "statement": "Things work.", "paper_value": "1.0", "paper_source": "Table 1",
             "statistic": "s", "rule": "CI > 0", "verdict": "not replicated", "magnitude": "smaller",
             "fidelity": "proxy", "deviations": [{"key": "model.width", "ours": 8, "paper": 64}],
             "measurable": True, "caveat": "a confound", "n_seeds": 3, "ci_level": 0.9, "note": "",
             "parts": [part], "kind": "paper", "reading": "", "unverified": [],
             "source": {"quote": "Things work, we show.", "where": "X et al., abstract",
                        "abstract_only": True}, "figures": ["fig1"]}
    unmeasured = {**claim, "id": "X-2", "parts": [], "verdict": "inconclusive", "magnitude": "not measured",
                  "fidelity": "faithful", "deviations": [], "measurable": False, "caveat": "",
                  "note": "not measurable at this scale: no runs"}
    ours = {**unmeasured, "id": "X-3", "kind": "hypothesis", "reading": "the direction is ours"}
    earlier = {**unmeasured, "id": "X-4", "source": {**claim["source"], "background": "reports earlier work"}}
    latex = {**claim["source"], "quote": "with \\textit{data augmentation}"}
    second = {**claim, "id": "X-5", "source": latex, "figures": ["fig1", "not_drawn"],
              "deviations": [*claim["deviations"], {"key": "lr", "ours": 1, "paper": 2},
                             {"key": "n_test", "ours": 500, "paper": None},
                             {"key": "augmentations", "ours": ["none", "light"], "paper": ["none", "full"]},
                             {"key": "lr_scale", "ours": 0.06853832299990852, "paper": 0.1}]}
    claims = {"paper": "paperx", "title": "Paper X (Someone et al., 2025)", "arxiv": "2501.00001",
              "seeds": [0, 1, 2], "scale": "smoke", "subset": True, "data_source": "subset:x",
              "claims": [claim, unmeasured, ours, earlier, second]}
    write_json(tmp_path / "claims.json", claims)
    write_json(tmp_path / "bench.json", {"device": "cpu", "batch_size": 4, "steps": 2, "model": {},
                                         "bare_images_per_s": 100.0, "ratio_loop_no_aug_to_bare": 0.9})
    forest = tmp_path / "report" / "forest" / "paperx.png"
    plotting.forest_plot(claims, forest)
    assert forest.stat().st_size > 1000
    fig2 = fig_path.with_name("fig2.png")  # a second figure of the same config: the config still shows once
    fig2.write_bytes(fig_path.read_bytes())
    fig2.with_suffix(".provenance.json").write_text(fig_path.with_suffix(".provenance.json").read_text())
    inputs = load_inputs([str(tmp_path / "claims.json")], [str(fig_path), str(fig2)],
                         [str(tmp_path / "bench.json")],
                         [str(forest)])
    assert inputs["counts"] == ["smoke: 3 paper claims with a falsifier (replications): 0 replicated, "
                                "2 not replicated, 0 inconclusive, 1 not measured (1 faithful, 2 proxy)",
                                "smoke: 1 background claims (the sentence reports earlier work or defines "
                                "the effect): 0 replicated, 0 not replicated, 0 inconclusive, 1 not measured "
                                "(1 faithful)",
                                "smoke: 1 hypotheses (ours): 0 replicated, 0 not replicated, 0 inconclusive, "
                                "1 not measured (1 faithful)"]
    html, md = tmp_path / "report" / "index.html", tmp_path / "report" / "index.md"
    render(str(root / "reports"), inputs, str(html), str(md))
    page = html.read_text()
    assert "X-1" in page and "not replicated" in page and "data:image/png;base64," in page
    # the verdict counts, then the scorecard table, then the forest plots, then the figures
    first = [page.index(s) for s in ("smoke: 3 paper claims", "<h2>Claims scorecard",
                                     'alt="forest plot paperx"', "<h2>Figures")]
    assert first == sorted(first)
    groups = [page.index(s) for s in ("Faithful: the paper", "X-2", "Proxy: settings", "X-1</td>",
                                      "Background: sentences", "X-4</td>", "Hypotheses: our reading",
                                      "X-3</td>")]
    assert groups == sorted(groups)
    assert "Things work, we show." in page and "the direction is ours" in page
    assert "<strong>background:</strong> reports earlier work" in page
    assert "model.width: 8 (paper: 64)" in page and "caveat:</strong> a confound" in page
    assert "paper 0.300: smaller" in page
    assert "abc123" in page and "CIFAR-10 subset" in page and "A caption." in page
    text = md.read_text()
    assert not markdown_table_problems(text)
    assert markdown_table_problems(text.replace("| **not replicated** |", "| not replicated | x |", 1))
    # the first screen says what this is: the scale, each paper's title, arXiv id and its counts
    for t in (text, unescape(page)):
        assert "smoke: CPU proxies at toy sizes" in t and "Paper X (Someone et al., 2025)" in t
        assert "(arXiv 2501.00001): 3 replications of the paper's claims at smoke (3 seeds): " \
            "2 not replicated, 1 not measured" in t
    assert "| paperx | <a id=\"claim-paperx-X-1\"></a>X-1 |" in text and "-0.100 [-0.200, -0.050]" in text
    assert "![forest plot paperx](forest/paperx.png)" in text
    # each deviation list once per paper; a row names only its own further ones
    assert "| **not replicated** | smaller | proxy: the paperx deviations (above) |" in text
    assert "proxy: the paperx deviations (above), and: lr: 1 (paper: 2); n_test: 500 (paper: —); " \
        "augmentations: none, light (paper: none, full); lr_scale: 0.0685 (paper: 0.1) |" in text
    for page_text in (text, unescape(page)):  # as a person writes it: no None, list repr, LaTeX
        assert "None" not in page_text and "['" not in page_text and "\\textit" not in page_text
        assert "with data augmentation" in page_text
    for page_text in (text, page):
        assert page_text.count("model.width: 8 (paper: 64)") == 1
        assert unescape(page_text).count('{"epochs": 3}') == 1  # the config once, linked from its figure
    assert "../paperx/figures/fig1.png" in text
    # every claim links to its figures that the report shows, every figure to the claims that name it
    assert '<a id="claim-paperx-X-1"></a>X-1 | Things work.<br>figures: [fig1](#fig-paperx-fig1)<br>' in text
    assert "figures: [fig1](#fig-paperx-fig1)<br>" in text.split("X-5 |")[1]  # a figure not drawn: no link
    assert "Claims it shows: " + ", ".join(f"[X-{i}](#claim-paperx-X-{i})" for i in range(1, 6)) in text
    assert "Claims it shows: none (it illustrates the runs; no claim reads it)" in text
    assert '<a href="#fig-paperx-fig1">fig1</a>' in page
    assert '<figure id="fig-paperx-fig1" class="plot">' in page
    assert 'Claims it shows: <a href="#claim-paperx-X-1">X-1</a>, <a href="#claim-paperx-X-2">X-2</a>' in page
    for doc, target in ((page, r'href="#([^"]+)"'), (text, r"\]\(#((?:fig|claim)-[^)]+)\)")):
        ids = set(re.findall(r'id="([^"]+)"', doc))
        headings = {"claim-parts-at-a-glance"}  # the Markdown contents line links a heading's own slug
        assert set(re.findall(target, doc)) - ids - headings == set(), "every in-page link has its target"
    assert "bare_images_per_s" in page and "100" in page
    assert "| ratio_loop_no_aug_to_bare | `0.9` |" in text
    json.loads(json.dumps(inputs["benchmarks"]))
    table = verdict_table([claims]).splitlines()
    assert table[2] == "| X-1 | paper | not replicated | smaller | proxy | -0.100 [-0.200, -0.050] |"
    assert table[3] == ("| X-2 | paper | inconclusive | not measured | faithful | not measurable at this "
                        "scale: no runs |")
    assert table[4].startswith("| X-3 | hypothesis |")


def _plan_job(paper: str, rule: str, run: str, seed: int, hours: float, peak_gb: float,
              flags: list[str] | None = None) -> dict:
    return {"paper": paper, "rule": rule, "run": run, "seed": seed, "steps": 1000, "flops": 2e15,
            "ops_per_step": 500.0, "peak_bytes": int(peak_gb * 1e9),
            "hours": {"H100": hours, "A100": 2 * hours, "V100": 10 * hours}, "request_mb": 4000,
            "formula": "epochs 1 x floor(1000/1)", "flags": flags or []}


# A plan as rule cost_plan writes it (replikit.plan.bill.document), made by hand: no step is counted here.
SMALL_PLAN = {
    "sources": ["config/paper.yaml"], "scale": "paper", "seeds": [0, 1], "papers": ["paperx", "papery"],
    "not_planned": ["paperz"],
    "assumptions": {"utilisation": 0.4, "launch_us": 10.0, "gpu_gb": 80.0,
                    "peaks_tflops": {"H100": {"tf32": 494.0, "fp32": 67.0, "bf16": 989.0},
                                     "A100": {"tf32": 156.0, "fp32": 19.5, "bf16": 312.0},
                                     "V100": {"tf32": 15.7, "fp32": 15.7, "bf16": 15.7}}},
    "jobs": [_plan_job("paperx", "px_train", "small", 0, 2.0, 1.5),
             _plan_job("paperx", "px_train", "small", 1, 2.0, 1.5),
             _plan_job("paperx", "px_train", "huge", 0, 30.0, 90.0,
                       ["needs 90.0 GB, more than an 80 GB GPU: lower paperx.batch_size"]),
             _plan_job("papery", "py_train", "a", 0, 0.05, 0.2)],
}


def test_cost_of_the_paper_scale_renders_sums_assumptions_and_flags(root, tmp_path):
    write_json(tmp_path / "plan.json", SMALL_PLAN)
    inputs = load_inputs([], [], [], [], str(tmp_path / "plan.json"))
    html, md = tmp_path / "index.html", tmp_path / "index.md"
    render(str(root / "reports"), inputs, str(html), str(md))
    page, text = html.read_text(), md.read_text()
    assert "Cost of the paper scale</h2>" in page and "## Cost of the paper scale" in text
    # per paper: jobs, PFLOP (2 a job), H100 / A100 / V100 hours, longest job, peak memory, flags
    assert "| paperx | 3 | 6 | 34 | 68 | 340 | 30.0 h (huge) | 90.0 GB (huge) | 1 |" in text
    assert "| papery | 1 | 2 | 0.05 | 0.10 | 0.50 | 0.05 h (a) | 0.2 GB (a) | 0 |" in text
    assert "| **total** | **4** | **8** | **34** | **68** | **340** |" in text
    assert "<td>paperx</td><td>3</td><td>6</td><td>34</td><td>68</td><td>340</td>" in page
    # the flagged job names its setting; the paper without a cost model is named
    flag = "px_train` huge (1 job): needs 90.0 GB, more than an 80 GB GPU: lower paperx.batch_size"
    assert flag in text and "1 of 4 jobs would not fit" in text
    assert "lower paperx.batch_size" in page and "No cost model for paperz: not planned." in page
    # the assumptions are stated: predictions, utilisation, launch overhead, peaks, no GPU measured
    for t in (text, page):
        assert "Predictions, not measurements" in t and "no GPU was measured" in t
        assert "at 40% of the dense peak" in t and "x 10 us each" in t
        assert "H100 494 / 67 / 989; A100 156 / 19.5 / 312; V100 15.7 / 15.7 / 15.7" in t
        assert "report.cost_plan" not in t


def test_without_a_cost_plan_the_report_says_how_to_get_it(root, tmp_path):
    inputs = load_inputs([], [], [], [])
    html, md = tmp_path / "index.html", tmp_path / "index.md"
    render(str(root / "reports"), inputs, str(html), str(md))
    for t in (unescape(html.read_text()), md.read_text()):
        assert "Cost of the paper scale</h2>" not in t and "## Cost of the paper scale" not in t
        assert "report.cost_plan</code> is false" in t or "`report.cost_plan` is false" in t
        assert "snakemake --cores 1 --config 'report={cost_plan: true}'" in t


def test_markdown_scorecard_rows_keep_their_cells_when_a_label_holds_a_pipe(root, tmp_path):
    """A part label such as `|grad W_Q|` is escaped in the Markdown scorecard, so every table row has
    its header's number of cells (before, the bare `|` split the row and shifted the verdict)."""
    import re

    part = {"label": "ratio |grad W_Q| / |grad W_V|", "per_seed": {"0": 0.1}, "mean": 0.1, "ci_low": 0.05,
            "ci_high": 0.15, "threshold": 0.0, "direction": "above", "paper_value": None,
            "verdict": "replicated", "magnitude": "no paper number"}
    claim = {"id": "Y-1", "statement": "A | B holds.", "paper_value": "-", "paper_source": "abstract",
             "statistic": "s", "rule": "CI > 0", "verdict": "replicated", "magnitude": "no paper number",
             "fidelity": "proxy", "deviations": [], "measurable": True, "caveat": "", "n_seeds": 5,
             "ci_level": 0.9, "note": "", "parts": [part], "kind": "paper", "reading": "", "unverified": [],
             "source": {"quote": "q", "where": "w", "abstract_only": True}}
    write_json(tmp_path / "claims.json", {"paper": "papery", "scale": "smoke", "subset": False,
                                          "data_source": "generated", "claims": [claim]})
    inputs = load_inputs([str(tmp_path / "claims.json")], [], [], [])
    html, md = tmp_path / "index.html", tmp_path / "index.md"
    render(str(root / "reports"), inputs, str(html), str(md))
    text = md.read_text()
    cells = lambda line: len(re.split(r"(?<!\\)\|", line.strip())) - 2  # noqa: E731
    header = next(line for line in text.splitlines() if line.startswith("| paper | claim |"))
    rows = [line for line in text.splitlines() if line.startswith("| papery |")]
    assert rows and all(cells(r) == cells(header) for r in rows), rows
    assert "\\|grad W_Q\\|" in text and "**replicated**" in rows[0]


def _small_figure(results, paper: str, name: str, subset: bool, folder: str | None = None) -> str:
    """A one-panel figure of `paper` and its provenance, as rule <paper>_figure writes them, under
    results/<folder or paper>/figures/ (a folder such as "<paper>/on-<dataset>")."""
    path = results / (folder or paper) / "figures" / f"{name}.png"
    fig, ax = plotting.new_figure(1)
    ax[0, 0].plot([0, 1], [1, 0])
    plotting.save(fig, path, name, "smoke", subset=subset)
    plt.close("all")
    write_json(path.with_suffix(".provenance.json"), {
        "paper": paper, "caption": f"{name} caption.", "rule": "r", "script": "s.py", "scale": "smoke",
        "subset": subset, "subset_title": "CIFAR-10 subset" if subset else "", "git_commit": "688b9efae291",
        "devices": ["cpu"], "host": "h",
        "packages": {"torch": "2"}, "config": {"paper": paper}})
    return str(path)


def _card(paper: str, subset: bool, created: str, commit: str, claims: list[dict]) -> dict:
    return {"paper": paper, "title": f"Paper {paper}", "arxiv": "", "seeds": [0, 1, 2, 3, 4],
            "scale": "smoke", "subset": subset,
            "data_source": "subset:cifar10" if subset else "generated by the pipeline",
            "data_label": "CIFAR-10 subset (7,728 training / 1,000 test images)" if subset else "",
            "claims": claims, "provenance": {"created": created, "git_commit": commit, "runs": []}}


def _claim(cid: str, **kw) -> dict:
    part = {"label": "gap", "per_seed": {"0": 0.2}, "mean": 0.2, "ci_low": 0.1, "ci_high": 0.3,
            "threshold": 0.0, "direction": "above", "paper_value": None, "verdict": "replicated",
            "magnitude": "no paper number"}
    return {"id": cid, "statement": f"Claim {cid} holds.", "paper_value": "up", "paper_source": "Fig. 1",
            "statistic": "s", "rule": "CI > 0", "verdict": "replicated", "magnitude": "no paper number",
            "fidelity": "proxy", "deviations": [], "measurable": True, "caveat": "", "n_seeds": 5,
            "ci_level": 0.9, "note": "", "parts": [part], "kind": "paper", "reading": "", "unverified": [],
            "source": {"quote": "q", "where": "w", "abstract_only": True}, "figures": [], **kw}


def test_report_title_order_unmeasured_rows_one_subset_banner_figures_and_latex(root, tmp_path):
    """Issue 66's report items: a title that says what it is (papers, scale, date, commit); the
    scorecard before the forest plots; an unmeasured row reads "not measured" in every column of its
    own (its claims.json unchanged); one subset banner per dataset; figures wide with a click to
    enlarge, still self-contained; inline LaTeX and "~" rendered."""
    from markdown_it import MarkdownIt

    results = tmp_path / "results"
    mup = {"quote": "spectral properties under $μ$P and the $\\mu$P scale $1/\\sqrt{\\text{depth}}$ (Sec.~3)",
           "where": "w", "abstract_only": True}
    sha = "688b9efae291b214a44c2f28e2ad1a989eca9852"
    cards = {
        "papera": _card("papera", True, "2026-11-27T09:00:00+00:00", sha,
                        [_claim("A-1", figures=["fig_a"], source=mup,
                                paper_value="T_opt ~ 1/K for the plain model"),
                         _claim("A-2", parts=[], verdict="inconclusive", magnitude="not measured",
                                measurable=False, note="not measurable at this scale: no runs")]),
        "paperb": _card("paperb", True, "2026-11-28T10:00:00+00:00", sha, [_claim("B-1")]),
        "paperc": _card("paperc", False, "2026-11-28T11:00:00+00:00", sha, [_claim("C-1")]),
    }
    paths = []
    for name, card in cards.items():
        write_json(results / name / "claims.json", card)
        paths.append(str(results / name / "claims.json"))
    before = (results / "papera" / "claims.json").read_text()
    figures = [_small_figure(results, "papera", "fig_a", True),
               _small_figure(results, "paperc", "fig_c", False)]
    forests = []
    for name, card in cards.items():
        forests.append(str(results / "report" / "forest" / f"{name}.png"))
        plotting.forest_plot(card, forests[-1])
    plt.close("all")
    inputs = load_inputs(paths, figures, [], forests)
    html, md = results / "report" / "index.html", results / "report" / "index.md"
    render(str(root / "reports"), inputs, str(html), str(md))
    page, text = html.read_text(), md.read_text()
    plain_page = unescape(page)

    # 1. the title says what this is; the first screen carries the date and the commit
    title = "Replications of 3 papers — smoke scale, 2026-11-28, commit 688b9ef"
    assert f"<title>{title}</title>" in plain_page and f"<h1>{title}</h1>" in plain_page
    assert text.startswith(f"# {title}\n")
    made = f"Scorecards written 2026-11-27 to 2026-11-28 (UTC) at commit {sha}."
    assert made in plain_page and made in text
    assert plain_page.index(made) < plain_page.index("smoke: CPU proxies at toy sizes")
    assert "replikit report" not in page and "replikit report" not in text

    # 2. the scorecard, then the forest plots ("claim parts at a glance"), then the figures
    for doc, marks in ((page, ("<h2>Claims scorecard", "<h2>Claim parts at a glance",
                               'alt="forest plot papera"', "<h2>Figures", 'alt="fig_a"')),
                       (text, ("## Claims scorecard", "## Claim parts at a glance", "![forest plot papera]",
                               "## Figures", "![fig_a]")),
                       (page, ('href="#scorecard"', 'href="#glance"', 'href="#figures"')),
                       (text, ("](#claims-scorecard)", "](#claim-parts-at-a-glance)", "](#figures)"))):
        at = [doc.index(m) for m in marks]
        assert at == sorted(at), marks

    # 3. an unmeasured row reads "not measured" in every column of its own, the verdict column too
    row = next(line for line in text.splitlines() if "</a>A-2 |" in line)
    cells = [c.strip() for c in re.split(r"(?<!\\)\|", row)[1:-1]]
    ours, seeds, scale, direction, magnitude, fidelity = cells[4:]
    assert ours.startswith("**not measured**") and seeds == "not measured"
    assert scale == "smoke (CIFAR-10 subset)"
    assert direction == "**not measured**" and magnitude == "not measured"
    assert fidelity.startswith("not measured")
    assert "inconclusive" not in row
    assert not markdown_table_problems(text)
    html_row = page[page.index('<tr class="not-measured">'):]
    html_row = html_row[:html_row.index("</tr>")]
    assert 'id="claim-papera-A-2"' in html_row and "inconclusive" not in html_row
    assert html_row.count("not measured") >= 5
    assert (results / "papera" / "claims.json").read_text() == before  # claims.json is not touched
    assert json.loads(before)["claims"][1]["verdict"] == "inconclusive"
    assert "1 replicated, 1 not measured" in text  # papera's line on the first screen

    # 4. one subset banner per dataset, naming its papers
    for doc in (text, plain_page):
        assert doc.count("Data is the CIFAR-10 subset") == 1 and "data is the CIFAR-10 subset" not in doc
    assert ("> **Data is the CIFAR-10 subset** (subset:cifar10), not the full dataset, for papera, "
            "paperb.") in text
    assert re.search(r"Data is the CIFAR-10 subset</strong> \(subset:cifar10\), not the full dataset, "
                     r"for\s+papera, paperb\.", plain_page)

    # 5. figures take the window's width and enlarge on a click, with no script and nothing fetched
    assert "figure.plot { width: calc(100vw" in page
    assert "input.zoom:checked + label.zoom img { max-width: none; }" in page
    for anchor in ("fig-papera-fig_a", "fig-paperc-fig_c"):
        assert (f'<figure id="{anchor}" class="plot">' in page
                and f'<input type="checkbox" class="zoom" id="zoom-{anchor}"><label class="zoom" '
                    f'for="zoom-{anchor}" title="click: full size"><img src="data:image/png;base64,' in page)
    zooms = page.count('<input type="checkbox" class="zoom"')
    assert zooms == page.count("<img ") == 5  # 2 figures, 3 forest plots
    assert "<script" not in page and not re.search(r'(?:src|href)="(?!data:|#)', page)
    assert "[![fig_a](../papera/figures/fig_a.png)](../papera/figures/fig_a.png)" in text
    assert "[![forest plot papera](forest/papera.png)](forest/papera.png)" in text

    # 6. inline LaTeX as Unicode, a tie as a space, a "~" that means "about" kept (escaped in Markdown)
    for doc in (text, plain_page):
        assert "$" not in doc and "\\mu" not in doc and "\\sqrt" not in doc
        assert "spectral properties under μP and the μP scale 1/√depth (Sec. 3)" in doc
    assert "T_opt ~ 1/K for the plain model" in plain_page
    assert "T_opt \\~ 1/K for the plain model" in text
    rendered = MarkdownIt("commonmark").enable(["table", "strikethrough"]).render(text)
    assert "T_opt ~ 1/K for the plain model" in rendered and "<s>" not in rendered


def test_the_title_falls_back_to_the_checkout_and_names_every_commit(monkeypatch):
    from replikit.reporting import report

    monkeypatch.setattr(report, "git_commit", lambda: "0123456789abcdef+dirty")
    head = report.headline([{"paper": "p", "scale": "default", "claims": []}])
    assert head["title"].startswith("Replications of 1 paper — default scale, 20")
    assert head["title"].endswith(", commit 0123456+dirty") and head["commits"] == ["0123456+dirty"]
    assert head["made"].startswith("Rendered ") and "at commit 0123456789abcdef+dirty." in head["made"]
    runs = (("p", "smoke", "aaaaaaaaaa"), ("q", "default", "bbbbbbbbbb+dirty"))
    cards = [{"paper": p, "scale": s, "claims": [],
              "provenance": {"created": f"2026-11-2{i}T00:00:00+00:00", "git_commit": c}}
             for i, (p, s, c) in enumerate(runs)]
    assert report.headline(cards)["title"] == ("Replications of 2 papers — smoke and default scales, "
                                               "2026-11-21, commits aaaaaaa, bbbbbbb+dirty")


def test_readable_renders_inline_math_and_keeps_a_tilde_that_means_about():
    from replikit.reporting.report import readable as plain

    assert plain("under $μ$P, with $\\mu$P") == "under μP, with μP"
    assert plain("a scale of $1/\\sqrt{\\text{depth}}$ and $L^2$, $\\gamma_0$") \
        == "a scale of 1/√depth and L², γ₀"
    assert plain("prior work~nichani2023provable, Sec.~3") == "prior work nichani2023provable, Sec. 3"
    for about in ("T_opt ~ 1/K", "T_opt ~1", "~100% train accuracy", "acc. ~0.882 vs ~0.93", "(~0.9)"):
        assert plain(about) == about
    assert plain("costs $5 and $10") == "costs $5 and $10"  # not math
    assert plain(["T_opt ~ 1/K", "\\textit{x}~y"]) == "T_opt ~ 1/K, x y" and plain(None) == "—"


def test_a_paper_line_counts_one_claim_and_one_seed_in_the_singular():
    from replikit.reporting.report import paper_lines

    claim = {"kind": "paper", "verdict": "replicated", "parts": [{"label": "a"}]}
    one = paper_lines([{"paper": "p", "scale": "smoke", "claims": [claim], "seeds": [0]}])[0]["line"]
    assert one == "1 replication of the paper's claims at smoke (1 seed): 1 replicated", one
    two = paper_lines([{"paper": "p", "scale": "smoke", "claims": [claim] * 2, "seeds": [0, 1]}])[0]["line"]
    assert two.startswith("2 replications of the paper's claims at smoke (2 seeds): "), two


def test_a_paper_line_names_the_claims_it_does_not_count():
    """A paper whose claims have no measured falsifier does not read "0 claims of the paper": its line
    says it has no replication and names the rows left out, by kind."""
    from replikit.reporting.report import paper_lines

    bare = {"kind": "paper", "verdict": "inconclusive", "parts": [{"label": "a"}],
            "standing": "falsifier not measured"}
    check = {**bare, "standing": "check"}
    paper = {"paper": "p", "scale": "smoke", "claims": [bare, bare, check], "seeds": [0]}
    line = paper_lines([paper])[0]["line"]
    assert line == ("0 replications of the paper's claims at smoke (1 seed): none; not counted: "
                    "2 with their falsifier not measured, 1 check"), line
