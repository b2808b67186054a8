"""A paper's dataset as a setting (its config key `dataset`, docs/data.md): the dataset a run's name
carries, the config check for a dataset the registry does not know, and why a margin whose pilot ran
on other data carries no evidence."""

from __future__ import annotations

from replikit.data import datasets


def run_dataset(cfg: dict, paper_dataset: str) -> str | None:
    """The dataset that the paper's runs name (their field `dataset`): None for the paper's own, so that
    its runs keep the names they had before the key existed."""
    name = cfg.get("dataset") or paper_dataset
    return None if name == paper_dataset else name


def dataset_errors(key: str, name: str) -> list[str]:
    """Config key `key` names a dataset the registry does not know: the error, naming the fix."""
    if name in datasets.names():
        return []
    return [f"config key '{key}' is {name!r}, not a registered dataset; use one of "
            f"{', '.join(datasets.names())}, or declare it under data.datasets (docs/data.md: how to add "
            "one)"]


def foreign_margin(paper: str, data: str, pilot: str, margins: str) -> str:
    """Why `margins` (e.g. "DT-1/3/4's margins") carry no evidence on `data` when their pilot ran on
    `pilot` (the paper's key `pilot_dataset`): a margin sized from one dataset's noise does not transfer.
    "" when the pilot ran on the same data."""
    if data == pilot:
        return ""
    return (f"margin from another dataset's pilot ({datasets.get(pilot).title}, not "
            f"{datasets.get(data).title}): {margins} were sized from that dataset's noise, and a margin "
            f"does not transfer between datasets; run the pilot on {data} (python -m replikit.plan.pilot "
            f"{paper}) and commit its margins with pilot_dataset: {data}")
