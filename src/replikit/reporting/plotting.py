"""One seaborn style for every figure, and a `save` that marks subset data."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np

from replikit.scoring.stability import fragile


class LazyModule:
    """Module `name`, imported on its first attribute access. Claims jobs import their paper's figure
    module, but only figure jobs draw: seaborn, with scipy.stats, costs ~1.5 s. (Not a LazyLoader
    module in sys.modules: anything that scans sys.modules, such as torch's import, would load it.)"""

    def __init__(self, name: str, setup: Callable[[], object] = lambda: None) -> None:
        self._name, self._setup = name, setup

    def __getattr__(self, attr: str):
        if self._name not in sys.modules:
            self._setup()
        return getattr(importlib.import_module(self._name), attr)


def pyplot() -> ModuleType:
    """matplotlib.pyplot on the Agg backend, imported when a figure is drawn (not by claims jobs)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


sns: ModuleType = LazyModule("seaborn", setup=pyplot)  # type: ignore[assignment]

PALETTE = "colorblind"
def seed_interval(values) -> tuple[float, float]:
    """The figures' error bars and bands: the scorecard's own interval (90 % Student-t over seeds,
    replikit.scoring.stats.t_interval), so that a figure and its claim row show the same bracket. Seaborn
    calls it as `errorbar=seed_interval`; one seed draws no bar."""
    from replikit.scoring.stats import t_interval

    _, low, high = t_interval(list(values), 0.90)
    return low, high


SEED_CI = seed_interval  # errorbar=SEED_CI in every figure


def set_style() -> None:
    sns.set_theme(context="paper", style="whitegrid", palette=PALETTE, font_scale=1.1)
    pyplot().rcParams.update({"figure.dpi": 120, "savefig.dpi": 150, "savefig.bbox": "tight",
                              "axes.titleweight": "bold"})


def step_axis(ax, ticks: int = 5) -> None:
    """At most `ticks` step ticks on the x axis, thousands written "14k", so long runs' step labels
    never run into each other."""
    from matplotlib.ticker import FuncFormatter, MaxNLocator

    ax.xaxis.set_major_locator(MaxNLocator(ticks, integer=True))
    ax.xaxis.set_major_formatter(FuncFormatter(lambda x, _: f"{x / 1000:g}k" if abs(x) >= 1000 else f"{x:g}"))


def new_figure(ncols: int = 1, width: float = 5.0, height: float = 3.6):
    set_style()
    return pyplot().subplots(1, ncols, figsize=(width * ncols, height), squeeze=False)


def _rgb(colour) -> tuple | None:
    from matplotlib.colors import to_rgb

    try:
        return tuple(round(v, 3) for v in to_rgb(colour))
    except (ValueError, TypeError):
        return None


def _legend_keys(axes) -> tuple[dict, dict]:
    """From the legends of `axes`: colour -> label (coloured keys) and line style -> label (keys in a
    neutral grey, which encode by line style); the first label of each."""
    by_colour, by_style = {}, {}
    for ax in axes:
        legend = ax.get_legend()
        if legend is None:
            continue
        for text, handle in zip(legend.get_texts(), legend.legend_handles, strict=False):
            if handle is None or not hasattr(handle, "get_color") or not handle.get_visible() \
                    or handle.get_linewidth() == 0:  # seaborn's subtitles ("model", "K") draw nothing
                continue
            rgb = _rgb(handle.get_color())
            if rgb is not None and rgb[0] == rgb[1] == rgb[2]:
                by_style.setdefault(handle.get_linestyle(), text.get_text())
            elif rgb is not None:
                by_colour.setdefault(rgb, text.get_text())
    return by_colour, by_style


def say_coinciding(fig) -> None:
    """In every panel where two differently drawn series (colour or line style) lie exactly on top of
    each other, the lower one hidden, name them in the panel: "'invariant (D4), K=1' and
    'invariant (D4), K=8' coincide"."""
    every_colour, every_style = _legend_keys(fig.axes)
    for ax in fig.axes:
        own_colour, own_style = _legend_keys([ax])
        colours, styles = {**every_colour, **own_colour}, {**every_style, **own_style}

        def name(line, colours=colours, styles=styles) -> str:
            parts = [colours.get(_rgb(line.get_color())), styles.get(line.get_linestyle())]
            return ", ".join(p for p in parts if p) or "a series"

        seen: dict[tuple, object] = {}
        pairs = []
        for line in ax.lines:
            x, y = np.asarray(line.get_xdata(), dtype=float), np.asarray(line.get_ydata(), dtype=float)
            if y.size < 2 or not np.isfinite(y).all():
                continue
            key = (x.tobytes(), np.round(y, 12).tobytes())
            look = (_rgb(line.get_color()), line.get_linestyle())
            if key in seen and (_rgb(seen[key].get_color()), seen[key].get_linestyle()) != look:
                pairs.append((name(seen[key]), name(line)))
            seen.setdefault(key, line)
        if pairs and not any("all arms" in t.get_text() for t in ax.texts):  # else said already
            said = "; ".join(f"'{a}' and '{b}'" for a, b in dict.fromkeys(pairs))
            headroom(ax)  # the note sits above the data, never on it
            ax.text(0.02, 0.98, f"{said} coincide (identical values; one hides the other)",
                    transform=ax.transAxes, fontsize=6, va="top", wrap=True,
                    bbox={"boxstyle": "round", "fc": "white", "ec": "0.7", "alpha": 0.9})


def headroom(ax, share: float = 0.14) -> None:
    """Raise the top of the y axis so that the top `share` of the panel is free of data (for a note or
    a legend there), on a linear or a log axis."""
    low, high = ax.get_ylim()
    if ax.get_yscale() == "log" and low > 0 and high > 0:
        ax.set_ylim(low, high * (high / low) ** (share / (1 - share)))
    elif high > low:
        ax.set_ylim(low, high + (high - low) * share / (1 - share))


# What the figure job knows of the runs a figure draws (set_drawn): their seeds, the subset file
# they read and the images they used of it; `finish` writes them under the title.
_DRAWN: dict = {}


def set_drawn(seeds: int | None = None, images: str | None = None, data: str | None = None) -> None:
    """Facts about the runs the next figure draws, for its banner: the number of seeds and, for a
    subset file, what the file is (`replikit.data.datasets.data_label`, e.g. "CIFAR-10 subset (7,728
    training / 1,000 test images)") and the images the runs used (e.g. "256 training / 500 test images")."""
    _DRAWN.clear()
    _DRAWN.update({k: v for k, v in {"seeds": seeds, "images": images, "data": data}.items() if v})


def finish(fig, title: str, scale: str, subset: bool | str) -> None:
    """What every figure gets before it is written: panels where series coincide say so
    (`say_coinciding`), then the title with the scale, the seeds drawn and, on a subset file, which
    file and the images the runs used (as `set_drawn` says; `subset` may itself be the file's label)."""
    say_coinciding(fig)
    note = f"scale: {scale}"
    if "seeds" in _DRAWN:
        note += f" | {_DRAWN['seeds']} seed{'s' if _DRAWN['seeds'] != 1 else ''}"
    if subset:
        used = f"; these runs: {_DRAWN['images']}" if "images" in _DRAWN else ""
        label = subset if isinstance(subset, str) else _DRAWN.get("data", "a subset")
        note += f"\nDATA: {label.replace('subset', 'SUBSET file', 1)}{used}; not the full dataset"
    fig.tight_layout()
    fig.suptitle(f"{title}\n{note}", fontsize=10, y=1.0, va="bottom")


def save(fig, path: str | Path, title: str, scale: str, subset: bool | str) -> None:
    """`finish` the figure and save it atomically."""
    finish(fig, title, scale, subset)
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.tmp{path.suffix}")
    fig.savefig(tmp)
    pyplot().close(fig)
    tmp.replace(path)


def colour_map(levels) -> dict:
    """One colour per level, in the order given: pass it as seaborn's `palette` with
    `hue_order=list(mapping)` and use it for every artist of the same level (points, means, error bars,
    baselines, legend), so that a colour means one thing whatever order the runs come in. Give the levels
    in an order fixed by their meaning (a constant of the paper such as its list of methods, or the
    conditions sorted by what they are), never in the order of the runs or of the specs:
    tests/test_figure_audit.py draws every figure with both reversed and checks that no condition
    changes its colour or style."""
    levels = list(dict.fromkeys(levels))
    palette = sns.color_palette(PALETTE, 10)
    # the colorblind palette, its most distinct hues first (its vermillion and brown are near its orange,
    # its grey is the neutral of keys that encode by line style)
    colours = [palette[i] for i in DISTINCT] * (len(levels) // len(DISTINCT) + 1)
    return dict(zip(levels, colours, strict=False))


DISTINCT = (0, 1, 2, 4, 9, 3, 5, 6, 8)
LINE_STYLES = ("-", "--", ":", "-.")
MARKERS = ("o", "s", "^", "D", "v")


def style_map(levels) -> dict:
    """One line style and marker per level, in the order given (fixed by meaning, as `colour_map`): for
    series that may lie on top of one another, so that the lower one still shows (a dashed line over a
    solid one, a square around a dot). Pass `dashes`/`markers` to seaborn via `style_args`, or use the
    entries' `ls` and `marker` for matplotlib artists."""
    levels = list(dict.fromkeys(levels))
    return {lv: {"ls": LINE_STYLES[i % len(LINE_STYLES)], "marker": MARKERS[i % len(MARKERS)]}
            for i, lv in enumerate(levels)}


def style_args(levels) -> dict:
    """seaborn keyword arguments `style_order`, `dashes` and `markers` from `style_map`."""
    styles = style_map(levels)
    dashes = {"-": "", "--": (4, 2), ":": (1, 2), "-.": (4, 1.5, 1, 1.5)}
    return {"style_order": list(styles), "dashes": {lv: dashes[st["ls"]] for lv, st in styles.items()},
            "markers": {lv: st["marker"] for lv, st in styles.items()}}


def hue_colours(levels, ordered: bool = False) -> dict:
    """One colour per level for seaborn's `palette` (with `hue_order=list(mapping)`), and for every
    extra artist of the same level. Categories keep the order given, on the qualitative palette;
    `ordered` levels (widths, depths, gamma0, T, similarity, K ...) are sorted numerically and drawn
    on a sequential palette, dark to light, so that their order reads off the colour."""
    levels = list(dict.fromkeys(levels))
    if not ordered:
        return colour_map(levels)
    levels = sorted(levels, key=float)
    # viridis without its last, pale-yellow fifth (hard to see on white)
    colours = sns.color_palette("viridis", max(len(levels), 1) + 1)[: len(levels)] if len(levels) > 1 \
        else sns.color_palette("viridis", 3)[:1]
    return dict(zip(levels, colours, strict=True))


def hue_args(levels, ordered: bool = False) -> dict:
    """seaborn keyword arguments `hue_order` and `palette` from `hue_colours`."""
    colours = hue_colours(levels, ordered)
    return {"hue_order": list(colours), "palette": colours}


def mark_grid_ends(ax, x, y, on_end, label: str = "at an end of the grid: a bound, not a located optimum",
                   colour="black") -> None:
    """Hollow rings around the points (x, y) where `on_end` is true: optima found at an end of their
    grid, which bound the optimum rather than locate it; keyed in the panel's legend. `colour`: the
    rings' (e.g. their condition's colour, where the panel draws several)."""
    x, y, on_end = (np.asarray(v) for v in (x, y, on_end))
    if on_end.any():
        ax.scatter(x[on_end], y[on_end], s=110, facecolors="none", edgecolors=[colour], linewidths=1.2,
                   zorder=6, label=f"{int(on_end.sum())} of {on_end.size} seeds {label}")
        ax.legend(fontsize=7)


CLAIM_GID = "claim {}"  # the gid of the artist that draws a claim's threshold or margin


def claim_line(ax, claim: str, value: float, what: str, axis: str = "y", **style):
    """A claim's threshold, drawn where the claim reads it: a horizontal line at `value` on the y axis
    (`axis="x"`: a vertical line), keyed in the legend as "<claim>: <what>" and tagged with the gid
    "claim <claim>" (tests/test_figure_audit.py checks that every claim that declares its threshold on a
    figure finds it there). Black dashed unless `style` says otherwise."""
    style = {"c": "black", "ls": "--", "lw": 1.0, **style}
    draw = ax.axhline if axis == "y" else ax.axvline
    return draw(value, label=f"{claim}: {what}", gid=CLAIM_GID.format(claim), **style)


def claim_band(ax, claim: str, low: float, high: float, what: str, axis: str = "y", **style):
    """A claim's margin as a shaded band from `low` to `high` on the y axis (`axis="x"`: on the x axis),
    keyed and tagged as `claim_line`'s. Light grey unless `style` says otherwise."""
    style = {"color": "grey", "alpha": 0.15, "lw": 0, **style}
    draw = ax.axhspan if axis == "y" else ax.axvspan
    return draw(low, high, label=f"{claim}: {what}", gid=CLAIM_GID.format(claim), **style)


def claim_artists(fig) -> dict[str, list[tuple[int, str]]]:
    """Claim id -> the (panel, axis) of every artist `claim_line`/`claim_band` (or a `gid` of the same
    form) drew in `fig`; a line's axis is "y" when it is horizontal."""
    out: dict[str, list[tuple[int, str]]] = {}
    for i, ax in enumerate(fig.axes):
        for art in [*ax.lines, *ax.patches, *ax.collections]:
            gid = art.get_gid() or ""
            if not gid.startswith(CLAIM_GID.format("")):
                continue
            axis = "y"
            if hasattr(art, "get_xdata"):
                x = np.asarray(art.get_xdata(), dtype=float)
                axis = "x" if x.size > 1 and np.allclose(x, x[0]) else "y"
            elif getattr(art, "get_data_transform", art.get_transform)() == ax.get_xaxis_transform():
                # an axvspan: x in data, y in the axes
                axis = "x"
            out.setdefault(gid.removeprefix(CLAIM_GID.format("")), []).append((i, axis))
    return out


def say_on_panel(ax, text: str) -> None:
    """A sentence in the panel (e.g. "all arms 0 % exact match: no arm learned"), where a reader looks."""
    ax.text(0.5, 0.5, text, transform=ax.transAxes, ha="center", va="center", fontsize=8,
            bbox={"boxstyle": "round", "fc": "white", "ec": "0.6", "alpha": 0.9})


VERDICT_COLOURS = {"replicated": "#2e7d32", "not replicated": "#c62828", "inconclusive": "#b8860b"}


def _row_limits(part: dict) -> tuple[float, float]:
    xs = [v for v in (*part["per_seed"].values(), part["threshold"], part.get("paper_value"),
                      part["ci_low"], part["ci_high"]) if v is not None]
    lo, hi = min(xs), max(xs)
    # a row whose values all coincide (e.g. every arm at 0) gets a readable width, not +-1e-5
    pad = 0.08 * (hi - lo) if hi - lo > 1e-9 else max(0.05 * abs(hi), 0.05)
    return lo - pad, hi + pad


def _stacked(values: list[float], base: float = 0.25, step: float = 0.12) -> list[float]:
    """Heights for seed dots: equal values stack upwards instead of hiding one another."""
    seen: dict[float, int] = {}
    heights = []
    for v in values:
        heights.append(base + step * seen.get(v, 0))
        seen[v] = seen.get(v, 0) + 1
    return heights


def _row_title(claim: dict, part: dict) -> str:
    """A forest row's full title, wrapped, never cut: claim, fidelity, label, verdict and why a rule made
    it inconclusive (or the caveat beside it), and the evidence (seeds on the claimed side, sign-flip p)."""
    import textwrap

    tag = claim["fidelity"] + (", our hypothesis" if claim.get("kind") == "hypothesis" else "")
    why = (part.get("no_evidence") or part.get("caveat") or "").removeprefix(part["label"] + ": ")
    verdict = part["verdict"] + (f" ({why})" if why else "")  # e.g. "... did not learn ..."
    n = part.get("n_seeds") or len(part["per_seed"])
    p = part.get("p_value")
    evidence = f"; {part['n_agree']}/{n} seeds on the claimed side, p = {p:.2g}" \
        if p is not None and "n_agree" in part else ""
    if part.get("stability") is not None:  # replikit.scoring.stability
        evidence += f"; same verdict at 5 fresh seeds: {part['stability']:.2f}" \
            + (" (FRAGILE)" if fragile(part["stability"]) else "")
    return textwrap.fill(f"{claim['id']} [{tag}] {part['label']}: {verdict}{evidence}", 150)


def forest_plot(card: dict, path: str | Path) -> None:
    """One row per measured claim part: per-seed points, mean and interval (coloured by verdict), the
    threshold (dashed) with the side the claim needs shaded, and the paper's value (star) where it
    states one; each row has its own x scale (the parts' statistics have different units). Titles wrap
    rather than being cut. Claims that were not measured are listed, not drawn."""
    rows = [(c, p) for c in card["claims"] for p in c["parts"]]
    titles = [_row_title(c, p) for c, p in rows]
    # tight_layout pads every row for the tallest title, so each row's height allows for it
    lines = max((t.count("\n") + 1 for t in titles), default=1)
    n = max(len(rows), 1)
    set_style()
    fig, axes = pyplot().subplots(n, 1, figsize=(9, (0.62 + 0.16 * (lines - 1)) * n + 0.9), squeeze=False)
    stars = False
    for ax, (_, part), title in zip(axes[:, 0], rows, titles, strict=False):
        colour = VERDICT_COLOURS[part["verdict"]]
        seeds = list(part["per_seed"].values())
        ax.scatter(seeds, _stacked(seeds), s=14, c="grey", alpha=0.8, zorder=2)
        if part["ci_low"] is not None:  # one seed has no interval
            ax.plot([part["ci_low"], part["ci_high"]], [0, 0], c=colour, lw=3, zorder=3)
        if part["mean"] is not None:
            ax.scatter([part["mean"]], [0], s=50, c=colour, marker="D", zorder=4)
        ax.axvline(part["threshold"], ls="--", c="black", lw=0.9)
        lo, hi = _row_limits(part)
        ax.set_xlim(lo, hi)
        above = part.get("direction", "above") == "above"
        side = (part["threshold"], hi) if above else (lo, part["threshold"])
        ax.axvspan(*side, color="grey", alpha=0.08, lw=0, zorder=0)
        if part.get("paper_value") is not None:
            stars = True
            ax.scatter([part["paper_value"]], [0], s=110, c="red", marker="*", zorder=5)
        ax.set_ylim(-0.6, 0.9)
        ax.set_yticks([])
        ax.tick_params(axis="x", labelsize=7, pad=1)
        ax.grid(axis="y", visible=False)
        ax.set_title(title, fontsize=7.5, loc="left", fontweight="normal", pad=2, color=colour)
    if not rows:
        axes[0, 0].set_axis_off()
    missing = [c["id"] for c in card["claims"] if not c["parts"]]
    foot = ("grey dots: seeds (equal values stacked); diamond and bar: mean and "
            f"{round(100 * card['claims'][0]['ci_level']) if card['claims'] else 90}% t-interval; dashed: "
            "threshold, shaded on the side the claim needs"
            + ("; red star: the paper's value" if stars else ""))
    if missing:
        foot += "\nnot measured at this scale: " + ", ".join(missing)
    fig.tight_layout(h_pad=0.6)
    fig.text(0.01, 0, foot, fontsize=7, va="top")
    save(fig, path, f"{card['paper']}: claim parts", card["scale"],
         card.get("data_label") or card.get("subset", False))
