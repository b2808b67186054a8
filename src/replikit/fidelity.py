"""Fidelity: how this run's settings depart from the papers' own (`config/paper.yaml`).

Deviations are computed, never typed: every leaf of a paper's config section that differs from
the same leaf in `config/paper.yaml` (both validated, so defaults are filled in), plus the number
of seeds and the data actually used. Keys that only say where or how often a job runs
(resources, checkpointing, evaluation cadence) are not deviations.
"""

from __future__ import annotations

from typing import Any

NOT_SETTINGS = ("resources", "checkpoint_every", "eval_every", "benchmark")


def paper_settings(paper_config: dict, section: str) -> dict:
    """One paper's own config section and seeds (from the validated `config/paper.yaml`)."""
    own = paper_config[section]
    return {"cfg": own, "seeds": own.get("seeds") or paper_config["seeds"]}


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


def _ignored(path: str) -> bool:
    return any(part in NOT_SETTINGS for part in path.split("."))


def deviations(ours: dict, paper: dict, seeds: list[int] | None = None,
               paper_seeds: list[int] | None = None, subset: bool = False) -> list[dict]:
    """Every setting of `ours` that differs from `paper`: [{"key", "ours", "paper"}]."""
    a, b = flatten(ours), flatten(paper)
    out = [{"key": k, "ours": a.get(k), "paper": b.get(k)}
           for k in sorted(set(a) | set(b)) if not _ignored(k) and a.get(k) != b.get(k)]
    if seeds is not None and paper_seeds is not None and len(seeds) != len(paper_seeds):
        out.append({"key": "seeds", "ours": len(seeds), "paper": len(paper_seeds)})
    if subset:
        out.append({"key": "data", "ours": "CIFAR-10 subset (7,728 training images)",
                    "paper": "full dataset"})
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
    """One line: `key: ours (paper: theirs); ...`."""
    return "; ".join(f"{d['key']}: {d['ours']} (paper: {d['paper']})" for d in devs)
