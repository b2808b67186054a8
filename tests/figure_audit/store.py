"""The stored smoke results that the figure audit draws from (tests/figure_audit/runs/results/<paper>/...).

`python -m tests.figure_audit.store RESULTS_DIR` copies, from a finished smoke run's `results/` folder,
the per-run files that every figure of every paper reads, for its first three smoke seeds (intervals and
all; small enough to commit), with their `computed_by` stamps dropped. The audit then draws each figure
through its paper's own `load_results`, as the figure rule does.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from replikit.core.config import load_config
from replikit.papers.registry import get

ROOT = Path(__file__).resolve().parents[2]
STORE = Path(__file__).resolve().parent / "runs"
SEEDS = [0, 1, 2]


def smoke_config() -> dict:
    return load_config(ROOT / "config/smoke.yaml", ROOT / "workflow/schemas/config.schema.yaml")


def figure_files(paper: str, figure: str, cfg: dict, root: Path) -> list[Path]:
    """The stored (or, with another root, the smoke run's) files one figure reads: its first three
    seeds, or the paper's own seeds where it sets fewer (latent lookahead runs one at smoke)."""
    p = get(paper)
    fig = p.figure(figure)
    seeds = p.seeds(cfg[paper], SEEDS)[:len(SEEDS)]
    return [root / f for f in p.per_run_files(cfg[paper], fig.reads, fig.name, seeds)]


def copy_from(results: Path) -> int:
    """Copy every figure's run files from a smoke run's results folder (its parent is the tree)."""
    cfg, tree, n = smoke_config(), results.parent, 0
    for paper in cfg["papers"]:
        for fig in get(paper).figures:
            for src in figure_files(paper, fig.name, cfg, tree):
                dst = STORE / src.relative_to(tree)
                if dst.exists():
                    continue
                data = json.loads(src.read_text())
                data.pop("computed_by", None)
                dst.parent.mkdir(parents=True, exist_ok=True)
                dst.write_text(json.dumps(data, separators=(",", ":")))
                n += 1
    return n


if __name__ == "__main__":
    print(f"{copy_from(Path(sys.argv[1]))} files stored under {STORE}")
