"""The figure audit (issue 37): every figure of every paper, drawn from stored smoke results
(tests/figure_audit/runs, seeds 0-2) through its paper's own `load_results`, as the figure rule draws
it, and checked on its matplotlib artists:

- one colour means one thing: within a figure, legend entries of one colour name the same level
  (one label contains the other, e.g. "crop_flip" and "SGD (MAP), crop_flip"), and a label keeps its
  colour in every panel;
- every legend entry's colour is drawn in its panel (no key for an artist that is not there);
- ordered hues (numeric labels: widths, depths, gamma0, T, K, ...) are listed in numeric order;
- no series lies wholly on an axis limit (hidden by the frame) unless the panel says so in a text.
"""

from __future__ import annotations

import re
from pathlib import Path

import matplotlib
import numpy as np
import pytest

from replikit.papers.registry import get
from replikit.reporting import plotting
from tests.figure_audit.store import STORE, figure_files, smoke_config

matplotlib.use("Agg")

SMOKE = smoke_config()
CASES = [pytest.param(p, f.name, id=f"{p}-{f.name}") for p in SMOKE["papers"] for f in get(p).figures]


def draw(paper: str, name: str, tmp_path: Path, monkeypatch, func=None):
    """The figure as its rule draws it (or `func` in its place), kept open (plotting.save captured)."""
    kept = {}

    def keep(fig, path, title, scale, subset):
        plotting.finish(fig, title, scale, subset)
        kept["fig"] = fig

    monkeypatch.setattr(plotting, "save", keep)
    p = get(paper)
    fig = p.figure(name)
    files = [str(f) for f in figure_files(paper, name, SMOKE, STORE)]
    assert files and all(Path(f).exists() for f in files), f"stored results missing for {paper}/{name}"
    results, specs = p.load_results({fig.reads: files}), p.experiments(SMOKE[paper])[name]
    if func is None:
        fig.draw(results, specs, tmp_path / "f.png", "smoke", False, SMOKE[paper])
    else:
        func(results[fig.frame], specs, tmp_path / "f.png", "smoke", False)
    return kept["fig"]


def _colour(artist) -> tuple | None:
    """The RGB an artist is drawn in (a line's colour, a collection's first face or edge colour)."""
    from matplotlib.collections import Collection
    from matplotlib.lines import Line2D
    from matplotlib.patches import Patch

    if isinstance(artist, Line2D):
        c = artist.get_color()
    elif isinstance(artist, Patch):
        c = artist.get_facecolor()
    elif isinstance(artist, Collection):
        faces = artist.get_facecolor()
        c = faces[0] if len(faces) else (artist.get_edgecolor()[0] if len(artist.get_edgecolor()) else None)
    else:
        return None
    if c is None or (not isinstance(c, str) and len(c) == 4 and c[3] == 0):
        return None
    return tuple(round(v, 3) for v in matplotlib.colors.to_rgb(c))


def legend_entries(ax) -> list[tuple[str, tuple | None, object]]:
    legend = ax.get_legend()
    if legend is None:
        return []
    entries = []
    for t, h in zip(legend.get_texts(), legend.legend_handles, strict=False):
        colour = _colour(h) if h is not None and h.get_visible() else None
        if colour is not None and colour[0] == colour[1] == colour[2]:
            colour = None  # a neutral grey or black key: line style or marker, not colour, encodes it
        entries.append((t.get_text(), colour, h))
    return entries


def drawn_colours(ax) -> set[tuple]:
    arts = [*ax.lines, *ax.collections, *ax.patches]
    return {c for a in arts if (c := _colour(a)) is not None}


def _ordered(label: str) -> tuple[str, float] | None:
    """(prefix, number) of a label that names a numeric level ("0.9", "N=128", "inv K=8")."""
    m = re.fullmatch(r"\s*(.*?)(-?[0-9]+(?:\.[0-9]+)?(?:e-?[0-9]+)?)\s*", label)
    return (m.group(1), float(m.group(2))) if m else None


def _same_level(a: str, b: str) -> bool:
    """Whether two labels name the same level: one contains the other ("crop_flip aug", "SGD (MAP),
    crop_flip aug"), or both name one arm before a colon ("lookahead: latent term")."""
    a, b = a.strip().lower(), b.strip().lower()
    if ":" in a and ":" in b and a.split(":")[0] == b.split(":")[0]:
        return True
    return a == b or (len(a) > 1 and a in b) or (len(b) > 1 and b in a)


def audit(fig) -> list[str]:
    """Every violation of the rules above, one line each."""
    problems, label_colour = [], {}
    axes = [ax for ax in fig.axes if ax.get_visible()]
    for i, ax in enumerate(axes):
        entries = [(lab, col) for lab, col, _ in legend_entries(ax) if col is not None and lab]
        drawn = drawn_colours(ax)
        for lab, col in entries:
            if not any(np.allclose(col, d, atol=0.01) for d in drawn):
                problems.append(f"panel {i}: legend entry {lab!r} has a colour drawn nowhere in its panel")
            if lab in label_colour and not np.allclose(label_colour[lab], col, atol=0.01):
                problems.append(f"panel {i}: {lab!r} changes colour between panels")
            label_colour.setdefault(lab, col)
            for other, c in label_colour.items():
                if np.allclose(c, col, atol=0.01) and not _same_level(other, lab):
                    problems.append(f"panel {i}: one colour means {other!r} and {lab!r} in one figure")
        levels = [_ordered(lab) for lab, _ in entries]
        for prefix in {lv[0] for lv in levels if lv is not None}:
            numbers = [lv[1] for lv in levels if lv is not None and lv[0] == prefix]
            if numbers != sorted(numbers):
                listed = [lab for lab, _ in entries]
                problems.append(f"panel {i}: ordered levels listed out of order: {listed}")
        problems += _hidden(ax, i) + _covered(ax, i)
    return problems


def _covered(ax, i: int) -> list[str]:
    """Series drawn exactly on top of another (one hides the other), in a panel that does not say so."""
    said = " ".join(t.get_text() for t in ax.texts).lower()
    seen, out = {}, []
    for line in ax.lines:
        x, y = np.asarray(line.get_xdata(), dtype=float), np.asarray(line.get_ydata(), dtype=float)
        if y.size < 2 or not np.isfinite(y).all():
            continue
        key = (x.tobytes(), np.round(y, 12).tobytes())
        colour = (_colour(line), line.get_linestyle())
        if key in seen and seen[key] != colour and not any(w in said for w in ("coincide", "all arms")):
            out.append(f"panel {i}: two series drawn differently coincide exactly (one hides the other)")
        seen.setdefault(key, colour)
    return out


def _hidden(ax, i: int) -> list[str]:
    """Lines whose every point sits on the y-axis limit, in a panel whose texts do not say why."""
    low, high = ax.get_ylim()
    said = " ".join(t.get_text() for t in ax.texts).lower()
    out = []
    for line in ax.lines:
        y = np.asarray(line.get_ydata(), dtype=float)
        if y.size < 2 or not np.isfinite(y).all() or line.get_label().startswith("_ref"):
            continue
        on_edge = np.allclose(y, low, atol=1e-9 * max(1, abs(high - low))) or np.allclose(y, high)
        if on_edge and not any(w in said for w in ("all arms", "no arm", "at 0", "floor", "identical")):
            edge = low if np.allclose(y, low) else high
            out.append(f"panel {i}: a series lies wholly on the axis limit {edge}")
    return out


@pytest.mark.parametrize("paper, name", CASES)
def test_every_figure_reads_by_colour(paper, name, tmp_path, monkeypatch):
    fig = draw(paper, name, tmp_path, monkeypatch)
    problems = audit(fig)
    plotting.pyplot().close(fig)
    assert not problems, f"{paper}/{name}:\n" + "\n".join(problems)


def old_temperature_sweep(df, specs, out, scale, subset):
    """cold_posterior_analysis.figure_temperature_sweep before commit bdf5b8e (frozen): its palette was
    zipped over the config's order of conditions, seaborn's hue order was the runs' order."""
    from replikit.papers.cold_posterior_analysis import _log_t_axis

    sns = plotting.sns
    names = {s.name: ("no augmentation" if s.augmentation == "none" else f"{s.augmentation} aug")
             for s in specs}
    d = df[df["run"].isin(names)].assign(condition=lambda x: x["run"].map(names))
    fig, axes = plotting.new_figure(2)
    for ax, metric in zip(axes[0], ("accuracy", "nll"), strict=True):
        sns.lineplot(d[d["T"] > 0], x="T", y=metric, hue="condition", marker="o", errorbar=("ci", 95), ax=ax)
        palette = dict(zip(names.values(), sns.color_palette(plotting.PALETTE), strict=False))
        for cond, sgd in d[d["T"] == 0].groupby("condition")[f"last_{metric}"].mean().items():
            ax.axhline(sgd, ls="--", c=palette[cond], label=f"SGD (MAP), {cond}")
        _log_t_axis(ax)
        ax.legend(fontsize=7)
    plotting.save(fig, out, "old", scale, subset)
    return d


def test_the_audit_fails_the_old_temperature_sweep(tmp_path, monkeypatch):
    """The legend that reversed an effect (issue 37, item 1): each dashed SGD line took the other
    condition's colour. The audit names it; today's figure passes (above)."""
    fig = draw("cold_posterior", "temperature_sweep", tmp_path, monkeypatch, old_temperature_sweep)
    problems = audit(fig)
    plotting.pyplot().close(fig)
    assert any("one colour means" in x and "SGD (MAP)" in x for x in problems), problems


def test_the_banner_says_the_seeds_drawn_and_the_images_the_runs_used():
    """Item 4: the subset banner states the images actually used, and every figure its seeds."""
    from replikit.papers.glue import images_used

    assert images_used({"n_train": 256, "n_test": 500}) == "256 training / 500 test images"
    assert images_used({"n_train": 1000, "n_test": 1000, "n_tasks": 3}) == \
        "1,000 training / 1,000 test images per task"
    assert images_used({"n_train": None, "n_test": None}) is None
    fig, _ = plotting.new_figure(1)
    plotting.set_drawn(seeds=3, images="256 training / 500 test images")
    plotting.finish(fig, "t", "smoke", subset=True)
    banner = fig._suptitle.get_text()
    plotting.set_drawn()
    plotting.pyplot().close(fig)
    assert "3 seeds" in banner and "these runs: 256 training / 500 test images" in banner
