"""Render the scorecard and figures into one self-contained HTML page and a Markdown twin."""

from __future__ import annotations

import base64
from pathlib import Path

import jinja2

from .io import read_json, write_text


def _fmt(x: float) -> str:
    return "n/a" if x != x else f"{x:.3f}"  # NaN check


def load_inputs(claims_paths: list[str], figure_paths: list[str], benchmark_path: str | None) -> dict:
    papers = [read_json(p) for p in claims_paths]
    figures = []
    for png in figure_paths:
        p = Path(png)
        prov = read_json(p.with_suffix(".provenance.json"))
        figures.append({"name": p.stem, "paper": p.parent.parent.name, "path": str(p),
                        "data": base64.b64encode(p.read_bytes()).decode(), "caption": prov["caption"],
                        "provenance": prov})
    bench = read_json(benchmark_path) if benchmark_path else None
    return {"papers": papers, "figures": figures, "benchmark": bench}


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
