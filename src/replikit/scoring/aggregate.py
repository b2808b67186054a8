"""Per-seed views of aggregated run tables, shared by every paper's claims and figures."""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable
from pathlib import Path

import numpy as np
import pandas as pd

from replikit.core.io import read_json


def run_rows(paths: Iterable[str | Path], rows: Callable[[dict], Iterable[dict]],
             columns: list[str] | None = None) -> pd.DataFrame:
    """The table of per-run JSON files (`Job.write`): `rows(record)` gives one file's rows, and each
    row is led by the file's run and seed. `columns`: the table's columns (also when there are no
    rows); None: those of the rows."""
    table = [{"run": m["run"], "seed": int(m["seed"]), **row}
             for m in map(read_json, paths) for row in rows(m)]
    return pd.DataFrame(table, columns=columns)


def final_rows(hist: pd.DataFrame) -> pd.DataFrame:
    """The last evaluation (largest `epoch`) of each (run, seed)."""
    last = hist.groupby(["run", "seed"])["epoch"].transform("max")
    return hist[hist["epoch"] == last].reset_index(drop=True)


def of_run(df: pd.DataFrame, run: str) -> pd.DataFrame:
    """The rows of one run; KeyError (claims.evaluate: the claim is not measurable) if it did not run."""
    sel = df[df["run"] == run]
    if sel.empty:
        raise KeyError(run)
    return sel


def by_seed(df: pd.DataFrame, run: str, key: str, column: str, key_type: type = float) -> dict[int, dict]:
    """{seed: {key value (as key_type): column value}} for one run, e.g. a depth or width sweep."""
    sel = of_run(df, run)
    out: dict[int, dict] = {}
    # plain lists, not itertuples: the null simulations call this thousands of times
    for seed, k, v in zip(sel["seed"].tolist(), sel[key].tolist(), sel[column].tolist(), strict=True):
        out.setdefault(int(seed), {})[key_type(k)] = float(v)
    return out


def endpoint_change(df: pd.DataFrame, run: str, key: str, column: str,
                    key_type: type = float) -> dict[int, float]:
    """Per seed: `column` at the largest value of `key` minus at the smallest."""
    return {s: v[max(v)] - v[min(v)] for s, v in by_seed(df, run, key, column, key_type).items()}


def per_seed(df: pd.DataFrame, run: str, column: str) -> dict[int, float]:
    """{seed: value of `column`} for one run; KeyError (claim not measurable) if it did not run."""
    sel = of_run(df, run)
    return dict(zip(sel["seed"].astype(int), sel[column].astype(float), strict=True))


def seed_diff(a: dict[int, float], b: dict[int, float]) -> dict[int, float]:
    """a[seed] - b[seed] over the seeds both have (seeds pair initialisation and data)."""
    return {s: a[s] - b[s] for s in sorted(set(a) & set(b))}


def cross_fit_choice(values: dict[int, dict], best=max) -> dict[int, object]:
    """Per seed, the option (a stage, a gamma0, a temperature ...) that is `best` on the mean over the
    *other* seeds: {seed: option}.

    Choosing the best of several noisy values and scoring it on the same seed is biased towards an
    effect (the maximum of noise is positive). Scoring a held-out half of the same seed's test set
    does not remove that bias: the network's own noise is shared by both halves. An option chosen on
    the other seeds is independent of this seed's noise, so its score here is unbiased.
    Ties go to the first option in sorted order. Options missing in any seed are not chosen.
    With fewer than two seeds there is nothing to choose on: {}.
    """
    seeds = sorted(values)
    if len(seeds) < 2:  # nothing to choose on: the caller's part then carries no evidence
        return {}
    options = sorted(set.intersection(*(set(values[s]) for s in seeds)))
    if not options:
        raise KeyError("no option that every seed has")
    out = {}
    for s in seeds:
        others = [o for o in seeds if o != s]
        mean = {opt: sum(values[o][opt] for o in others) / len(others) for opt in options}
        out[s] = best(options, key=lambda opt, m=mean: m[opt])
    return out


def _parabola_at_best(curve: dict[float, float], minimize: bool) -> tuple[np.ndarray, np.ndarray] | None:
    """log10 of the best grid point and its two neighbours, and the coefficients (a, b, c) of the
    parabola through the curve's values there; None when the best point is at an end of the grid."""
    sign = -1.0 if minimize else 1.0
    gs = sorted(curve)
    i = max(range(len(gs)), key=lambda j: (sign * curve[gs[j]], -gs[j]))
    if i == 0 or i == len(gs) - 1:
        return None
    x = np.log10([gs[i - 1], gs[i], gs[i + 1]])
    return x, np.polyfit(x, [curve[gs[i - 1]], curve[gs[i]], curve[gs[i + 1]]], 2)


def interpolated_optimum(curve: dict[float, float], minimize: bool = False) -> float | None:
    """log10 of the grid value (a gamma0, a learning rate ...) that maximises (`minimize`: minimises) a
    parabola through the best grid point and its two neighbours, in log10 of the grid value: a
    continuous estimate of the optimum, so a curve that shifts by less than a grid step moves it by less.
    None when the best point is at an end of the grid (the optimum is not located)."""
    fit = _parabola_at_best(curve, minimize)
    if fit is None:
        return None
    x, (a, b, _) = fit
    if (a if minimize else -a) <= 0:  # flat, or bent the wrong way, with the middle point best
        return float(x[1])
    return float(np.clip(-b / (2 * a), x[0], x[2]))


def relative_curvature(curve: dict[float, float], minimize: bool = False) -> float | None:
    """Curvature over the peak value of the parabola (in log10 of the grid value) through the best grid
    point and its two neighbours, the fit `interpolated_optimum` locates the optimum with: a value x
    decades off the optimum scores about peak * (1 -+ k x^2) (k returned). None at an end of the grid,
    when the parabola has no optimum there, or when its peak value is not positive."""
    fit = _parabola_at_best(curve, minimize)
    if fit is None:
        return None
    _, (a, b, c) = fit
    if (a if minimize else -a) <= 0:  # no optimum of the right kind
        return None
    peak = c - b * b / (4 * a)
    return float(abs(a) / peak) if peak > 0 else None


def margin_from_curvature(curvatures: dict[str, float | None], cost: float) -> dict:
    """The shift (decades) at which the value costs `cost` of its optimum, at the median relative
    curvature of the located curves, rounded down to 0.01: the margin rule of the equivalence claims
    whose pilots set them (issue 30)."""
    located = sorted(v for v in curvatures.values() if v is not None)
    if not located:
        raise ValueError("no pilot curve has a located optimum; the margin cannot be set")
    k = float(np.median(located))
    return {"margin": math.floor(100 * math.sqrt(cost / k) + 1e-9) / 100, "median_relative_curvature": k,
            "relative_curvature": curvatures, "loss_cost": cost}


def best_on_grid(curve: dict[float, float], minimize: bool = False) -> float:
    """log10 of the best grid value (the first one on ties)."""
    sign = -1.0 if minimize else 1.0
    return math.log10(max(sorted(curve), key=lambda g: (sign * curve[g], -g)))


def borrowed_noise(margins_from: str | None, margins: str, paper: str) -> str:
    """Why `margins` (e.g. "ST-1's margins"), sized from the noise of another scale's pilot (a block's
    config key `margins_from`), carry no evidence here: that scale's runs (their widths, networks,
    steps) set a noise this one does not share. "" when the block's margins are its own pilot's."""
    if not margins_from:
        return ""
    return (f"margins from the {margins_from} scale's pilot: {margins} were sized from the noise of that "
            f"scale's runs, not of this one's; run a pilot here (python -m replikit.plan.pilot {paper} "
            "--scale S) and commit its margins without margins_from")


PILOT_SEEDS = 5  # a noise margin's pilot seeds: the range of n draws grows with n (2.33 sd at 5)


def margin_from_seed_range(by_setting: dict[str, dict[int, float]], step: float,
                           cap: float | None = None) -> dict:
    """An invariance claim's margin sized from the noise (issue 64): the mean, over the settings of
    `by_setting` ({setting: {seed: value}}), of the value's range over the pilot's seeds, rounded down
    to `step` (and at most `cap`), with its derivation. A quantity that "does not change" with a
    setting is read against how much one setting's runs already differ from seed to seed; the contrast
    a falsifier reads plays no part, so its verdict is not fixed by the margin. The rule fixes the
    pilot's seeds at PILOT_SEEDS, since a range grows with the number of draws."""
    counts = sorted({len(v) for v in by_setting.values()})
    if counts != [PILOT_SEEDS]:
        raise ValueError(f"a margin from the seeds' range reads {PILOT_SEEDS} pilot seeds per setting, not "
                         f"{counts or 0}: a range grows with the number of seeds; fix: a pilot of "
                         f"{PILOT_SEEDS} seeds")
    ranges = {k: max(v.values()) - min(v.values()) for k, v in by_setting.items()}
    noise = float(np.mean(list(ranges.values())))
    margin = round(math.floor(noise / step + 1e-9) * step, 3)
    return {"margin": min(margin, cap) if cap is not None else margin, "seed_range": noise,
            "ranges": ranges, "step": step, "cap": cap}
