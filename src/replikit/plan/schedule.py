"""Which ready job a run starts first: the longest, as the scale's last published run timed it.

On 2 cores a run ends packed only when its longest jobs start early (longest processing time first):
Snakemake otherwise starts ready jobs in no useful order, and a few jobs of several minutes started
last leave one core idle at the end. Each stage rule's Snakemake `priority` is the seconds its job
took in the published snapshot of its scale (`docs/published/scorecard-<scale>.json`, the runtime's
`stage_longest_s`); a stage the snapshot has not timed, and every figure and claims job, gets 0.
Snakemake does not pass a job's priority on to the jobs it waits for, so a stage takes at least the
priority of every stage after it in its paper (an earlier stage feeds the later ones: latent
lookahead's puzzles, its training), and preparing a dataset, which every paper's jobs wait for, comes
before all. A priority orders jobs only: it changes no result and no output.
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


def stage_priorities(seconds: dict[str, dict[str, float]], paper: str, stages: list[str]) -> dict[str, int]:
    """Each of a paper's stages (in its order) -> its priority: the longest published job of it or of
    any stage after it, so that what feeds a long job starts as early as the long job would."""
    out, later = {}, 0
    for name in reversed(stages):
        later = max(later, priority(seconds, paper, name))
        out[name] = later
    return out


def first_of_all(seconds: dict[str, dict[str, float]]) -> int:
    """The priority of preparing a dataset: above every stage's."""
    return int(max((t for stages in seconds.values() for t in stages.values()), default=0.0)) + 1
