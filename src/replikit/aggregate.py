"""Per-seed views of aggregated run tables, shared by every paper's claims and figures."""

from __future__ import annotations

import pandas as pd


def final_rows(hist: pd.DataFrame) -> pd.DataFrame:
    """The last evaluation (largest `epoch`) of each (run, seed)."""
    last = hist.groupby(["run", "seed"])["epoch"].transform("max")
    return hist[hist["epoch"] == last].reset_index(drop=True)


def per_seed(df: pd.DataFrame, run: str, column: str) -> dict[int, float]:
    """{seed: value of `column`} for one run; KeyError (claim not measurable) if it did not run."""
    sel = df[df["run"] == run]
    if sel.empty:
        raise KeyError(run)
    return dict(zip(sel["seed"].astype(int), sel[column].astype(float), strict=True))


def seed_diff(a: dict[int, float], b: dict[int, float]) -> dict[int, float]:
    """a[seed] - b[seed] over the seeds both have (seeds pair initialisation and data)."""
    return {s: a[s] - b[s] for s in sorted(set(a) & set(b))}
