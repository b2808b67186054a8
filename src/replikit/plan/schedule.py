"""Which ready job a run starts first: the longest, as the scale's last published run timed it.

On 2 cores a run ends packed only when its longest jobs start early (longest processing time first):
Snakemake otherwise starts ready jobs in no useful order, and a few jobs of several minutes started
last leave one core idle at the end. Each stage rule's Snakemake `priority` is the seconds its job
took in the published snapshot of its scale (`docs/published/scorecard-<scale>.json`, the runtime's
`stage_longest_s`); a stage the snapshot has not timed, and every figure and claims job, gets 0.
A priority orders jobs only: it changes no result and no output.
"""

from __future__ import annotations

import json
from pathlib import Path


def stage_seconds(published: Path, scale: str) -> dict[str, dict[str, float]]:
    """paper -> stage -> the longest job's seconds in the scale's published run ({} without one)."""
    path = published / f"scorecard-{scale}.json"
    if not path.exists():
        return {}
    per_paper = json.loads(path.read_text()).get("runtime", {}).get("per_paper", {})
    return {paper: dict(t.get("stage_longest_s", {})) for paper, t in per_paper.items()}


def priority(seconds: dict[str, dict[str, float]], paper: str, stage: str, share: float = 1.0) -> int:
    """A stage job's priority: its stage's longest published job in whole seconds, times `share`,
    the part of that job this one runs (a per-seed job of a stage whose jobs run several seeds)."""
    return int(seconds.get(paper, {}).get(stage, 0.0) * share)
