"""Render the scorecard and figures into one self-contained HTML page and a Markdown twin.

The page opens with the verdict counts per scale and one forest plot per paper; the scorecard
table follows, grouped by fidelity (claims tested under the paper's own settings first, proxies
with their deviations after), then every figure with its caption and provenance.
"""

from __future__ import annotations

import base64
import json
from collections import Counter
from pathlib import Path

import jinja2

from .claims import FIDELITIES
from .fidelity import describe
from .io import read_json, write_text


def _fmt(x: float | None) -> str:
    return "n/a" if x is None or x != x else f"{x:.3f}"  # undefined or NaN


def load_benchmark(path: str) -> dict:
    """A benchmark JSON as a titled list of (key, value) rows; numbers formatted, nested values as JSON."""
    raw = read_json(path)
    rows = []
    for key, value in raw.items():
        if isinstance(value, float):
            value = f"{value:.4g}"
        elif isinstance(value, (dict, list)):
            value = json.dumps(value)
        rows.append((key, str(value)))
    p = Path(path)
    return {"name": f"{p.parent.name}/{p.stem}", "path": str(p), "rows": rows}


def verdict_counts(papers: list[dict]) -> list[str]:
    """Per scale: how many of the papers' claims got each verdict and their fidelity; then the same for
    our hypotheses, counted apart (they are never replications of a paper)."""
    lines = []
    for scale in dict.fromkeys(p["scale"] for p in papers):
        for kind, noun in (("paper", "paper claims"), ("hypothesis", "hypotheses (ours)")):
            claims = [c for p in papers if p["scale"] == scale for c in p["claims"] if c["kind"] == kind]
            if not claims:
                continue
            n = Counter("not measured" if not c.get("measurable", True) else c["verdict"] for c in claims)
            fid = Counter(c["fidelity"] for c in claims)
            parts = [f"{n[v]} {v}" for v in ("replicated", "not replicated", "inconclusive", "not measured")]
            lines.append(f"{scale}: {len(claims)} {noun}: " + ", ".join(parts) + " ("
                         + ", ".join(f"{fid[f]} {f}" for f in FIDELITIES if fid[f]) + ")")
    return lines


def _with_deviation_text(card: dict) -> dict:
    for c in card["claims"]:
        c["deviation_text"] = describe(c["deviations"]) or "none: the paper's own settings"
    return card


def load_inputs(claims_paths: list[str], figure_paths: list[str], benchmark_paths: list[str],
                forest_paths: list[str] | None = None) -> dict:
    papers = [_with_deviation_text(read_json(p)) for p in claims_paths]
    figures = []
    for png in figure_paths:
        p = Path(png)
        prov = read_json(p.with_suffix(".provenance.json"))
        figures.append({"name": p.stem, "paper": prov["paper"], "path": str(p),
                        "data": base64.b64encode(p.read_bytes()).decode(), "caption": prov["caption"],
                        "provenance": prov})
    forests = [{"paper": Path(f).stem, "file": Path(f).name,
                "data": base64.b64encode(Path(f).read_bytes()).decode()} for f in forest_paths or []]
    labels = {"faithful": "Faithful: the paper's own settings",
              "unverified": "Unverified: the paper-scale settings, never checked against the paper's text",
              "proxy": "Proxy: settings that depart from the paper (listed per claim)",
              "preflight": "Preflight: the paper's settings with budgets cut (inconclusive by design)"}
    groups = [(label, [(paper, c) for paper in papers for c in paper["claims"]
                       if c["kind"] == "paper" and c["fidelity"] == fid]) for fid, label in labels.items()]
    groups.append(("Hypotheses: our reading beyond the papers' sentences (judged by the same rule, never "
                   "counted as replications of a paper)",
                   [(paper, c) for paper in papers for c in paper["claims"] if c["kind"] == "hypothesis"]))
    return {"papers": papers, "figures": figures, "forests": forests, "counts": verdict_counts(papers),
            "groups": [g for g in groups if g[1]],
            "preflight": any(p["scale"] == "preflight" for p in papers),
            "benchmarks": [load_benchmark(p) for p in benchmark_paths]}


def render(template_dir: str, inputs: dict, html_out: str, md_out: str) -> None:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(template_dir), autoescape=False,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    env.filters["f3"] = _fmt
    html_env = jinja2.Environment(loader=jinja2.FileSystemLoader(template_dir),
                                  autoescape=jinja2.select_autoescape(["html", "j2"]),
                                  undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True)
    html_env.filters["f3"] = _fmt
    write_text(md_out, env.get_template("report.md.j2").render(**inputs, figure_dir=Path(md_out).parent))
    write_text(html_out, html_env.get_template("report.html.j2").render(**inputs))


def verdict_table(cards: list[dict]) -> str:
    """A Markdown table of every claim's verdicts and numbers, as the README shows them:
    `python -m replikit.report results/*/claims.json`."""
    lines = ["| claim | kind | direction | magnitude | fidelity | ours: mean [CI] per part |",
             "|---|---|---|---|---|---|"]
    for card in cards:
        for c in card["claims"]:
            parts = "; ".join(f"{_fmt(p['mean'])} [{_fmt(p['ci_low'])}, {_fmt(p['ci_high'])}]"
                              for p in c["parts"])
            cell = "; ".join(x for x in (parts, c["note"]) if x) or "-"
            lines.append(f"| {c['id']} | {c['kind']} | {c['verdict']} | {c['magnitude']} | {c['fidelity']} "
                         f"| {cell} |")
    return "\n".join(lines)


if __name__ == "__main__":
    import sys

    print(verdict_table([read_json(p) for p in sys.argv[1:]]))
