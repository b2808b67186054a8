"""The figure audit (issue 37): every figure of every paper, drawn from stored smoke results
(tests/figure_audit/runs, each paper's first three smoke seeds) through its paper's own
`load_results`, as the figure rule draws it, and checked on its matplotlib artists:

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
from replikit.scoring.claims import rests_on_a_threshold
from tests.figure_audit.store import STORE, figure_files, smoke_config

matplotlib.use("Agg")

SMOKE = smoke_config()
CASES = [pytest.param(p, f.name, id=f"{p}-{f.name}") for p in SMOKE["papers"] for f in get(p).figures]


_LOADED: dict = {}


def stored(paper: str, name: str) -> tuple[dict, list]:
    """The figure's stored results (through its paper's `load_results`, once per process; a copy for
    each draw) and its specs."""
    p = get(paper)
    if (paper, name) not in _LOADED:
        files = [str(f) for f in figure_files(paper, name, SMOKE, STORE)]
        assert files and all(Path(f).exists() for f in files), (
            f"stored results missing for {paper}/{name}; fix: run the paper at smoke, `snakemake --cores 2 "
            f"--configfile config/smoke.yaml --config 'papers=[{paper}]'`, then store its first three "
            "seeds' runs: "
            f"`python -m tests.figure_audit.store scales/smoke/results`, and check it: "
            f"`python -m replikit.tools.paper_check {paper}`")
        _LOADED[paper, name] = p.load_results({p.figure(name).reads: files})
    results = {k: v.copy() if hasattr(v, "copy") else v for k, v in _LOADED[paper, name].items()}
    return results, list(p.experiments(SMOKE[paper])[name])


def draw(paper: str, name: str, tmp_path: Path, monkeypatch, func=None):
    """The figure as its rule draws it (or `func` in its place), kept open (plotting.save captured;
    `finish` run without its layout pass, which moves no artist and takes a third of the time)."""
    kept = {}

    def keep(fig, path, title, scale, subset):
        fig.tight_layout = lambda *a, **k: None
        plotting.finish(fig, title, scale, subset)
        kept["fig"] = fig

    monkeypatch.setattr(plotting, "save", keep)
    fig = get(paper).figure(name)
    results, specs = stored(paper, name)
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


_SIGNATURES: dict = {}  # each figure as stored, drawn by the audit, for the run-order check below
_CLAIM_ARTISTS: dict = {}  # and the claims' thresholds it draws, for the threshold check below


@pytest.mark.parametrize("paper, name", CASES)
def test_every_figure_reads_by_colour(paper, name, tmp_path, monkeypatch):
    fig = draw(paper, name, tmp_path, monkeypatch)
    problems = audit(fig)
    _SIGNATURES[paper, name] = figure_signature(fig)
    _CLAIM_ARTISTS[paper, name] = plotting.claim_artists(fig)
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


# ---------------------------------------------------------------- the run-order check (issue 66, item 2)
# A figure is read by colour first, so a condition's colour and line style must be bound by its meaning,
# never by the order in which the runs (rows of the results) or the specs (the config's conditions) come.
# Each figure is drawn twice more, once with its rows reversed and once with its specs reversed; every
# artist, matched between the draws by where it is drawn, must keep its look (colour, line style,
# marker), up to one relabelling of the looks that the legend makes too (a permutation applied to every
# artist and key alike keeps the figure right).


def _text(v: float) -> str:
    return f"{v:.5g}" if np.isfinite(v) else "nan"


def _look_of_line(line) -> tuple:
    mfc = line.get_markerfacecolor()
    mfc = None if isinstance(mfc, str) and mfc == "none" else plotting._rgb(mfc)
    return ("line", plotting._rgb(line.get_color()), str(line.get_linestyle()), str(line.get_marker()), mfc)


def _look_of(rgba, edge=None, kind: str = "face") -> tuple:
    def rgb(c):
        c = np.asarray(c, dtype=float).ravel()
        return None if c.size < 3 or (c.size == 4 and c[3] == 0) else tuple(round(float(v), 3) for v in c[:3])
    return (kind, rgb(rgba) if rgba is not None else None, rgb(edge) if edge is not None else None)


def _nth(colours, i: int):
    colours = np.asarray(colours)
    return None if not len(colours) else colours[min(i, len(colours) - 1)]


def panel_signature(ax) -> tuple[list[tuple], list[tuple[str, tuple]]]:
    """What one panel draws, as (where, look) pairs, and its legend as (label, look) pairs. Where: a
    line's data; a scatter point's y (stripplot jitters x at random); a band's, bar's or segment's
    vertices."""
    from matplotlib.collections import LineCollection, PathCollection, PolyCollection
    from matplotlib.patches import Patch

    items = []
    for line in ax.lines:
        if not line.get_visible():
            continue
        x, y = (np.asarray(v, dtype=float).ravel() for v in (line.get_xdata(), line.get_ydata()))
        items.append((("L", tuple(map(_text, x)), tuple(map(_text, y))), _look_of_line(line)))
    for coll in ax.collections:
        if not coll.get_visible():
            continue
        faces, edges = coll.get_facecolor(), coll.get_edgecolor()
        if isinstance(coll, PathCollection):
            for i, (_, y) in enumerate(np.asarray(coll.get_offsets(), dtype=float).reshape(-1, 2)):
                items.append((("P", _text(y)), _look_of(_nth(faces, i), _nth(edges, i), "point")))
        elif isinstance(coll, LineCollection):
            for i, seg in enumerate(coll.get_segments()):
                items.append((("S", tuple(map(_text, np.asarray(seg).ravel()))),
                              _look_of(_nth(edges, i), None, "segment")))
        elif isinstance(coll, PolyCollection):
            for i, path in enumerate(coll.get_paths()):
                verts = np.round(np.asarray(path.vertices, dtype=float), 6)
                verts = verts[np.lexsort(verts.T[::-1])] if verts.size else verts
                items.append((("C", tuple(map(_text, verts.ravel()))),
                              _look_of(_nth(faces, i), None, "band")))
    for patch in ax.patches:
        if isinstance(patch, Patch) and patch.get_visible():
            verts = patch.get_verts()
            items.append((("R", tuple(map(_text, np.asarray(verts).ravel()))),
                          _look_of(patch.get_facecolor(), None, "patch") + (patch.get_hatch(),)))
    legend = []
    if ax.get_legend() is not None:
        containers = {c.get_label(): c for c in ax.containers}
        for text, handle in zip(ax.get_legend().get_texts(), ax.get_legend().legend_handles, strict=False):
            if text.get_text() in containers:  # an error bar's key: its data line
                handle = containers[text.get_text()][0]
            if handle is None:
                continue
            if hasattr(handle, "get_linestyle") and hasattr(handle, "get_marker"):
                look = _look_of_line(handle)
            elif isinstance(handle, PathCollection):
                look = _look_of(_nth(handle.get_facecolor(), 0), _nth(handle.get_edgecolor(), 0), "point")
            elif isinstance(handle, Patch):
                look = _look_of(handle.get_facecolor(), None, "patch") + (handle.get_hatch(),)
            else:
                continue
            legend.append((text.get_text(), look))
    return items, legend


def figure_signature(fig) -> list:
    return [panel_signature(ax) for ax in fig.axes if ax.get_visible()]


def _split(look: tuple) -> tuple[tuple, tuple]:
    """A look's colours (line and marker face; face and edge) and the rest (kind, line style, marker)."""
    if look[0] == "line":
        return (look[1], look[4]), (look[0], look[2], look[3], look[4] is None)
    return (look[1], look[2]), (look[0], *look[3:], look[1] is None, look[2] is None)


KINDS = {"L": "line", "P": "dot", "S": "error bar", "C": "band", "R": "patch"}


def _named(colour, legend: list[tuple[str, tuple]]) -> str:
    names = [lab for lab, lk in legend if colour in _split(lk)[0] and lab]
    return f"{colour} ({names[0]!r})" if names else str(colour)


def order_problems(before: list, after: list, how: str) -> list[str]:
    """Where a condition changes its colour or style between two draws of one figure, artists matched
    by where they are drawn; one consistent relabelling of colours (and of styles), legend included,
    passes."""
    from collections import Counter, defaultdict

    if len(before) != len(after):
        return [f"{how}: {len(before)} panels, then {len(after)}"]
    out = []
    for i, ((items_a, legend_a), (items_b, legend_b)) in enumerate(zip(before, after, strict=True)):
        where_a, where_b = defaultdict(Counter), defaultdict(Counter)
        for where, look in items_a:
            where_a[where][look] += 1
        for where, look in items_b:
            where_b[where][look] += 1
        perms = ({}, {}), ({}, {})  # (colour, back), (style, back)

        def relate(a: tuple, b: tuple, what: str, i=i, perms=perms, legend=legend_a) -> None:
            for k, (xs, ys) in enumerate(zip(_split(a), _split(b), strict=True)):
                fwd, back = perms[k]
                for x, y in zip(xs if k == 0 else (xs,), ys if k == 0 else (ys,), strict=True):
                    if x is None or y is None:
                        continue
                    thing = "colour" if k == 0 else "style"
                    if fwd.setdefault(x, y) != y:
                        out.append(f"panel {i}, {how}: {what} in {thing} {_named(x, legend)} is drawn in "
                                   f"{y}, while elsewhere that {thing} becomes {fwd[x]}")
                    elif back.setdefault(y, x) != x:
                        out.append(f"panel {i}, {how}: {what}: {thing}s {_named(x, legend)} and "
                                   f"{_named(back[y], legend)} both become {y}")

        def mapped(look: tuple, perms=perms) -> tuple:
            (c0, c1), style = _split(look)
            c0, c1 = (perms[0][0].get(c, c) for c in (c0, c1))
            style = perms[1][0].get(style, style)
            return (c0, c1), style

        common = sorted(set(where_a) & set(where_b), key=str)
        for where in common:
            if len(where_a[where]) == 1 and len(where_b[where]) == 1:
                relate(next(iter(where_a[where])), next(iter(where_b[where])), f"a {KINDS[where[0]]}")
        for label, look in legend_a:
            match = [lk for lab, lk in legend_b if lab == label]
            if label and match:
                relate(look, match[0], f"legend key {label!r}")
        for where in common:
            moved = Counter()
            for look, n in where_a[where].items():
                moved[mapped(look)] += n
            if moved != Counter({_split(lk): n for lk, n in where_b[where].items()}):
                out.append(f"panel {i}, {how}: the {KINDS[where[0]]}s at one place change colour or style: "
                           f"{sorted(where_a[where], key=str)} -> {sorted(where_b[where], key=str)}")
        moved = set(where_a) ^ set(where_b)
        if moved:
            out.append(f"panel {i}, {how}: {len(moved)} artists drawn at other places "
                       f"(e.g. {sorted(moved, key=str)[0]!r:.160})")
    return list(dict.fromkeys(out))


def draw_reordered(paper: str, name: str, monkeypatch, tmp_path: Path, how: str, func=None):
    """The figure's signature drawn from its rows reversed (`how` = "rows") or its specs reversed."""
    kept = {}
    monkeypatch.setattr(plotting, "save", lambda fig, *a, **k: kept.setdefault("fig", fig))
    fig = get(paper).figure(name)
    results, specs = stored(paper, name)
    if how == "rows":
        results = {k: v.iloc[::-1].reset_index(drop=True) if hasattr(v, "iloc") else v
                   for k, v in results.items()}
    elif how == "specs":
        specs = specs[::-1]
    if func is None:
        fig.draw(results, specs, tmp_path / "f.png", "smoke", False, SMOKE[paper])
    else:
        func(results[fig.frame], specs, tmp_path / "f.png", "smoke", False, cfg=SMOKE[paper])
    sig = figure_signature(kept["fig"])
    plotting.pyplot().close(kept["fig"])
    return sig


def run_order_problems(paper: str, name: str, monkeypatch, tmp_path: Path, func=None) -> list[str]:
    base = _SIGNATURES.get((paper, name)) if func is None else None
    base = base or draw_reordered(paper, name, monkeypatch, tmp_path, "as stored", func)
    return [p for how in ("rows", "specs") for p in
            order_problems(base, draw_reordered(paper, name, monkeypatch, tmp_path, how, func),
                           f"{how} reversed")]


@pytest.mark.parametrize("paper, name", CASES)
def test_every_figure_keeps_its_colours_whatever_the_run_order(paper, name, tmp_path, monkeypatch):
    problems = run_order_problems(paper, name, monkeypatch, tmp_path)
    assert not problems, f"{paper}/{name}:\n" + "\n".join(problems)


def old_optimum_vs_depth(df, specs, out, scale, subset=False, cfg=None):
    """depthwise_transfer_analysis.figure_optimum_vs_depth before issue 66 (frozen, its margin band left
    out): the seeds' dots took their colour from the order in which the parameterizations first appear
    in the specs, the means and the legend from an alphabetical groupby and the colour cycle."""
    import pandas as pd

    from replikit.papers.depthwise_transfer_analysis import BRANCHES, optima
    from replikit.scoring.stats import t_interval

    rows = [{"parameterization": BRANCHES[s.branch], "depth": s.depth, "log10_optimal_lr": v}
            for s in specs for _, v in optima(df, s.name).items() if v is not None]
    d = pd.DataFrame(rows)
    fig, axes = plotting.new_figure(1, width=5.6)
    ax = axes[0, 0]
    plotting.sns.stripplot(d, x="depth", y="log10_optimal_lr", hue="parameterization", ax=ax,
                           native_scale=True, log_scale=(2, False), dodge=False, alpha=0.45, legend=False)
    for i, (param, g) in enumerate(d.groupby("parameterization")):
        means = [(depth, *t_interval(x["log10_optimal_lr"].tolist(), 0.90))
                 for depth, x in g.groupby("depth")]
        depth, mean, lo, hi = (np.array(v) for v in zip(*means, strict=True))
        ax.errorbar(depth * (1.04 if i else 0.96), mean, yerr=[mean - lo, hi - mean], marker="o", capsize=3,
                    label=param)
    ax.legend(fontsize=8)
    plotting.save(fig, out, "old", scale, subset)
    return d


def test_the_run_order_check_fails_the_old_optimum_vs_depth(tmp_path, monkeypatch):
    """The bug the check was written for (issue 66, item 1): with the specs reversed, the old figure's
    dots swapped colours while its means and legend did not. Today's figure passes (above)."""
    problems = run_order_problems("depthwise_transfer", "optimum_vs_depth", monkeypatch, tmp_path,
                                  old_optimum_vs_depth)
    assert any("specs reversed: a dot" in x and "muP, unscaled branches" in x for x in problems), problems


# ---------------------------------------------------------------- each claim's threshold on its figure
# (issue 66, item 3)
# A claim whose verdict rests on a numeric threshold or margin (not the 0 of a paired difference)
# declares the figure and axis that draw it (`Claim(drawn=...)`), and that figure draws it with
# plotting.claim_line/claim_band, keyed with the claim id. BM-6's bound is drawn on its own panel of
# probe_per_layer (the relative drop per stage), which says "not measured" where no 0%-noise run exists
# (smoke) and draws the bound all the same.
# Which claims rest on one is read from each claim's rule (`rests_on_a_threshold`), so that a new
# threshold claim cannot be left out of the check; at smoke these are BM-1, BM-5, BM-6, CL-2, CL-5,
# DT-1, DT-3, DT-4, IH-1, RC-5, SC-1, SC-3 and ST-1.
def test_the_threshold_rule_reads_claims_rules():
    def rule(text: str):
        return type("C", (), {"rule": text})()

    assert not any(rests_on_a_threshold(rule(r)) for r in (
        "CI > 0", "both CIs > 0", "all three CIs < 0", "CI > 0 over the gamma0 values every seed learned"))
    assert all(rests_on_a_threshold(rule(r)) for r in (
        "lower CI bound > 0.9", "first CI > 0; relative drop CI < 0.1", "CI inside +-0.015",
        "CI below the margin", "CI > 0; no evidence when neither arm reaches 0.62 held-out accuracy"))


def drawn_claims(paper: str, name: str, tmp_path: Path, monkeypatch) -> dict:
    if (paper, name) not in _CLAIM_ARTISTS:
        fig = draw(paper, name, tmp_path, monkeypatch)
        _CLAIM_ARTISTS[paper, name] = plotting.claim_artists(fig)
        plotting.pyplot().close(fig)
    return _CLAIM_ARTISTS[paper, name]


@pytest.mark.parametrize("paper", SMOKE["papers"])
def test_every_claims_threshold_is_drawn_on_its_figure(paper, tmp_path, monkeypatch):
    p = get(paper)
    claims = p.claims(p.experiments(SMOKE[paper]), SMOKE[paper])
    problems = [f"{c.id} rests on a numeric threshold or margin but declares no figure that draws it "
                "(Claim(drawn=((figure, axis),)))"
                for c in claims if rests_on_a_threshold(c) and not c.drawn]
    for c in claims:
        for figure, axis in c.drawn:
            if figure not in c.figures:
                problems.append(f"{c.id}: draws its threshold on {figure!r}, which is not among its figures")
            found = drawn_claims(paper, figure, tmp_path, monkeypatch).get(c.id, [])
            if axis not in {a for _, a in found}:
                problems.append(f"{c.id}: {figure} draws no reference artist for it on its {axis} axis "
                                f"(found: {found}); draw it with plotting.claim_line or claim_band")
    assert not problems, "\n".join(problems)


def test_an_optimum_at_an_end_of_the_grid_is_drawn_there_hollow(tmp_path, monkeypatch):
    """optimum_vs_depth (issue 66): a seed whose best eta0 sits at an end of the grid (no located
    optimum) is drawn at that end as a hollow ring in its parameterization's colour and keyed in the
    legend, not silently dropped. The stored smoke runs have none: one seed's loss is made best at the
    smallest learning rate."""
    from replikit.papers.depthwise_transfer_analysis import BRANCHES, figure_optimum_vs_depth

    run, seed = "sweep_branch-one_depth-8_width-64", 1

    end = {}

    def with_an_end(df, specs, out, scale, subset):
        df = df.copy()
        end["y"] = float(np.log10(df["lr"].min()))
        low = (df["run"] == run) & (df["seed"] == seed) & (df["lr"] == df["lr"].min())
        df.loc[low, "train_loss"] = df["train_loss"].min() - 0.1
        return figure_optimum_vs_depth(df, specs, out, scale, subset, cfg=SMOKE["depthwise_transfer"])

    fig = draw("depthwise_transfer", "optimum_vs_depth", tmp_path, monkeypatch, with_an_end)
    ax = fig.axes[0]
    rings = [c for c in ax.collections if "at an end of the grid" in str(c.get_label())]
    problems = audit(fig)
    keys = [t.get_text() for t in ax.get_legend().get_texts()]
    plotting.pyplot().close(fig)
    assert len(rings) == 1 and len(rings[0].get_offsets()) == 1, [c.get_label() for c in ax.collections]
    (x, y), = rings[0].get_offsets()
    assert np.isclose(x / 8, 1.04) and np.isclose(y, end["y"]), (x, y, end)  # at depth 8, at the end
    colour = plotting._rgb(plotting.colour_map(BRANCHES.values())[BRANCHES["one"]])
    assert plotting._rgb(rings[0].get_edgecolor()[0]) == colour
    assert not len(rings[0].get_facecolor()) or rings[0].get_facecolor()[0][3] == 0  # hollow
    assert any(k.startswith(f"1 of 6 seeds of {BRANCHES['one']}: best eta0 at an end") for k in keys), keys
    assert not problems, problems
