"""One seaborn style for every figure, and a `save` that marks subset data."""

from __future__ import annotations

from pathlib import Path

import matplotlib

matplotlib.use("Agg")
import matplotlib.pyplot as plt  # noqa: E402
import seaborn as sns  # noqa: E402

PALETTE = "colorblind"


def set_style() -> None:
    sns.set_theme(context="paper", style="whitegrid", palette=PALETTE, font_scale=1.1)
    plt.rcParams.update({"figure.dpi": 120, "savefig.dpi": 150, "savefig.bbox": "tight",
                         "axes.titleweight": "bold"})


def new_figure(ncols: int = 1, width: float = 5.0, height: float = 3.6):
    set_style()
    return plt.subplots(1, ncols, figsize=(width * ncols, height), squeeze=False)


def save(fig, path: str | Path, title: str, scale: str, subset: bool) -> None:
    """Title the figure with its scale (and a CIFAR-10 subset warning) and save atomically."""
    note = f"scale: {scale}"
    if subset:
        note += " | DATA: CIFAR-10 SUBSET (7,728 train / 1,000 test), not the full dataset"
    fig.tight_layout()
    fig.suptitle(f"{title}\n{note}", fontsize=10, y=1.0, va="bottom")
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.stem}.tmp{path.suffix}")
    fig.savefig(tmp)
    plt.close(fig)
    tmp.replace(path)
