"""Fidelity: how this run's settings depart from the papers' own (`config/paper.yaml`).

Deviations are computed, never typed: every leaf of a paper's config section that differs from
the same leaf in `config/paper.yaml` (both validated, so defaults are filled in), plus the number
of seeds and the data actually used. Keys that only say where or how often a job runs
(resources, checkpointing, benchmarks) are not deviations, nor are the settings a paper declares
figure-only (read by no claim's statistic). Evaluation cadence is a setting: a statistic may average
over evaluations (rank collapse's RC-5).

`config/paper.yaml` is our best reading of each paper, and it departs from the paper where a
setting cannot be followed (data not available offline, a different serialization ...). Each paper
declares those departures (`Departure`, with the reason): they make every row a proxy, at every
scale. Settings never checked against the paper text are declared `unverified`.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

# keys that say how a block is run or judged, not what the paper set: `margins_from` names the scale whose
# pilot sized a block's margins
NOT_SETTINGS = ("resources", "checkpoint_every", "benchmark", "margins_from")
# What a paper that has not declared its departures (Paper(departures=None)) lists as unverified.
UNDECLARED = ("departures (none declared: Paper(departures=...) lists how config/paper.yaml departs from the "
              "paper)")


@dataclass(frozen=True)
class Departure:
    """A way `config/paper.yaml` itself departs from the paper: `key` (a config key, or a name for a
    choice made in code), what we do, what the paper does, and why."""

    key: str
    ours: str
    paper: str
    reason: str


def paper_settings(paper_config: dict, section: str, departures: tuple[Departure, ...] | None = (),
                   unverified: tuple[str, ...] = (), figure_only: tuple[str, ...] = ()) -> dict:
    """One paper's own config section and seeds (from the validated `config/paper.yaml`), with what
    the paper declares about them (see the module docstring). `departures` None: not declared, so
    every claim is unverified (UNDECLARED) until they are."""
    own = paper_config[section]
    return {"cfg": own, "seeds": own.get("seeds") or paper_config["seeds"],
            "departures": [asdict(d) for d in departures or ()],
            "unverified": list(unverified) + ([UNDECLARED] if departures is None else []),
            "figure_only": list(figure_only)}


def flatten(cfg: dict, prefix: str = "") -> dict[str, Any]:
    """{"a.b.c": leaf} for every leaf of nested dicts (lists are leaves)."""
    out: dict[str, Any] = {}
    for key, value in cfg.items():
        path = f"{prefix}{key}"
        if isinstance(value, dict):
            out.update(flatten(value, path + "."))
        else:
            out[path] = value
    return out


def _ignored(path: str, figure_only: tuple[str, ...] | list[str] = ()) -> bool:
    return any(part in NOT_SETTINGS for part in path.split(".")) or any(_under(path, f) for f in figure_only)


def deviations(ours: dict, paper: dict, seeds: list[int] | None = None,
               paper_seeds: list[int] | None = None, subset: str = "",
               figure_only: tuple[str, ...] | list[str] = ()) -> list[dict]:
    """Every setting of `ours` that differs from `paper`: [{"key", "ours", "paper"}]; `subset` is what
    the data is when it is a subset file (`replikit.data.datasets.data_label`), else ""."""
    a, b = flatten(ours), flatten(paper)
    out = [{"key": k, "ours": a.get(k), "paper": b.get(k)}
           for k in sorted(set(a) | set(b)) if not _ignored(k, figure_only) and a.get(k) != b.get(k)]
    if seeds is not None and paper_seeds is not None and len(seeds) != len(paper_seeds):
        out.append({"key": "seeds", "ours": len(seeds), "paper": len(paper_seeds)})
    if subset:
        out.append({"key": "data", "ours": subset, "paper": "full dataset"})
    return out


def _under(key: str, prefix: str) -> bool:
    return key == prefix or key.startswith(prefix + ".")


def claim_deviations(devs: list[dict], experiment_keys: set[str], uses: tuple[str, ...]) -> list[dict]:
    """The deviations that concern one claim: shared settings (model, optimizer, data, seeds ...)
    and the keys of the experiments it reads, not those of other claims' experiments."""
    def concerns(key: str) -> bool:
        mine = any(_under(key, u) for u in uses)
        other = any(_under(key, e) for e in experiment_keys)
        return mine or not other

    return [d for d in devs if concerns(d["key"])]


def describe(devs: list[dict]) -> str:
    """One line: `key: ours (paper: theirs[; why]); ...`."""
    from replikit.core.text import human

    return "; ".join(f"{d['key']}: {human(d['ours'])} (paper: {human(d['paper'])}"
                     + (f"; {d['reason']}" if d.get("reason") else "") + ")" for d in devs)
