"""Render the scorecard and figures into one self-contained HTML page and a Markdown twin."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import jinja2

from .io import read_json, write_text


def _fmt(x: float) -> str:
    return "n/a" if x != x else f"{x:.3f}"  # NaN check


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


def load_inputs(claims_paths: list[str], figure_paths: list[str], benchmark_paths: list[str]) -> dict:
    papers = [read_json(p) for p in claims_paths]
    figures = []
    for png in figure_paths:
        p = Path(png)
        prov = read_json(p.with_suffix(".provenance.json"))
        figures.append({"name": p.stem, "paper": p.parent.parent.name, "path": str(p),
                        "data": base64.b64encode(p.read_bytes()).decode(), "caption": prov["caption"],
                        "provenance": prov})
    return {"papers": papers, "figures": figures,
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
