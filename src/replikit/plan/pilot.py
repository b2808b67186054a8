"""A paper's pilot: the margins its equivalence claims use, set from runs on seeds that no verdict uses,
by a rule stated in the paper's module before the pilot ran (issue 30).

    python -m snakemake --cores 2 --config scale=default 'papers=["depthwise_transfer"]' \\
        'seeds=[100,101,102,103,104]' outdir=pilot/dt_default --until dt_train
    python -m replikit.plan.pilot depthwise_transfer --scale default --runs pilot/dt_default/results

(a paper whose block sets its own `seeds`, as continual learning's does, takes them there too:
`'continual_learning={"seeds": [100,101,102,103,104]}'`; targets go before `--config`) writes
`config/pilots/<paper>.<scale>.json`: the pilot's curves (loss per learning rate, per network and
seed), the rule, and the margins it gives, which then go into the paper's config block by hand, in a
commit before the verdict runs. `tests/test_pilots.py` recomputes the committed margins from the
committed pilot. Where a rule changes after its pilot ran, `--committed` applies it to the committed
pilot file's curves (the same seeds, no run).
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

PILOTS = Path(__file__).resolve().parents[3] / "config" / "pilots"
# paper -> the module that holds its margin rule: MARGIN_RULE, pilot_curves(paths, cfg),
# margins_from_curves(curves, cfg) and, where the rule prices a loss, MARGIN_LOSS_COST
PAPERS = {"depthwise_transfer": "replikit.papers.depthwise_transfer_analysis",
          "continual_learning": "replikit.papers.continual_learning_analysis",
          "shaped_transformer": "replikit.papers.shaped_transformer_analysis",
          "super_consistency": "replikit.papers.super_consistency_analysis",
          "induction_heads": "replikit.papers.induction_heads_analysis",
          "outlier_features": "replikit.papers.outlier_features_analysis"}


def rule_module(paper: str):
    import importlib

    return importlib.import_module(PAPERS[paper])


def pilot_file(paper: str, scale: str) -> Path:
    return PILOTS / f"{paper}.{scale}.json"


def read_curves(pilot: dict) -> dict[str, dict[int, dict[float, float]]]:
    """A pilot file's curves with numeric seeds and grid values, as `margins_from_curves` takes them."""
    return {run: {int(seed): {float(x): y for x, y in by_x.items()} for seed, by_x in by_seed.items()}
            for run, by_seed in pilot["curves"].items()}


def committed_curves(paper: str, scale: str) -> dict[str, dict[int, dict[float, float]]]:
    """The committed pilot file's curves (`--committed`)."""
    path = pilot_file(paper, scale)
    if not path.is_file():
        raise SystemExit(f"no committed pilot {path}: run the pilot first and pass --runs (see --help)")
    return read_curves(json.loads(path.read_text()))


def run_curves(module, a: argparse.Namespace, cfg: dict) -> dict[str, dict[int, dict[float, float]]]:
    """The pilot's curves from its runs (`--runs`), or from its jobs' checkpoints (`--checkpoints`)."""
    if a.checkpoints and not hasattr(module, "pilot_curves_from_checkpoints"):
        raise SystemExit(f"{a.paper}'s rule cannot be read from checkpoints: leave out --checkpoints")
    found = (a.runs / a.paper / "checkpoints").glob("*.ckpt") if a.checkpoints \
        else (a.runs / a.paper / "runs").glob("*/seed*/metrics.json")
    paths = sorted(found)
    if not paths:
        raise SystemExit(f"no pilot runs under {a.runs / a.paper}: run the pilot first (see --help)")
    try:
        return (module.pilot_curves_from_checkpoints if a.checkpoints else module.pilot_curves)(paths, cfg)
    except ValueError as e:  # a pilot not finished yet: say which run and what to do
        raise SystemExit(str(e)) from e


def main(argv: list[str] | None = None) -> None:
    from replikit.plan.bill import load

    ap = argparse.ArgumentParser(prog="python -m replikit.plan.pilot", description=__doc__.split("\n")[0])
    ap.add_argument("paper", choices=sorted(PAPERS))
    ap.add_argument("--scale", required=True, help="the scale whose config block the margins are for")
    source = ap.add_mutually_exclusive_group(required=True)
    source.add_argument("--runs", type=Path,
                        help="the pilot's results folder (its <paper>/runs/<run>/seed<N>/metrics.json)")
    source.add_argument("--committed", action="store_true",
                        help="apply the module's rule to the committed pilot file's curves instead (after a "
                             "rule changed; the pilot's seeds and curves stay)")
    ap.add_argument("--checkpoints", action="store_true",
                    help="read the pilot from its jobs' checkpoints (<paper>/checkpoints/*.ckpt) instead, "
                         "for a rule that reads only what a checkpoint holds (induction heads' emergence "
                         "times: the pilot may stop once every network has emerged)")
    a = ap.parse_args(argv)
    module = rule_module(a.paper)
    config = load([f"config/{a.scale}.yaml"] if a.scale != "default" else [])
    cfg = config[a.paper]
    curves = committed_curves(a.paper, a.scale) if a.committed else run_curves(module, a, cfg)
    seeds = sorted({s for by_seed in curves.values() for s in by_seed})
    if set(seeds) & set(config["seeds"]):
        raise SystemExit(f"pilot seeds {seeds} overlap the verdict seeds {config['seeds']}: a pilot must use "
                         "seeds that no verdict uses")
    try:
        margins = module.margins_from_curves(curves, cfg)
    except ValueError as e:  # the rule cannot read these curves: say why
        raise SystemExit(str(e)) from e
    out = pilot_file(a.paper, a.scale)
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps({
        "paper": a.paper, "scale": a.scale, "seeds": seeds,
        "rule": module.MARGIN_RULE, "loss_cost": getattr(module, "MARGIN_LOSS_COST", None),
        "margins": {c: m["margin"] for c, m in margins.items()}, "derivation": margins,
        "curves": {run: {str(s): {f"{x:g}": y for x, y in by_x.items()} for s, by_x in by_seed.items()}
                   for run, by_seed in curves.items()},
    }, indent=1) + "\n")
    print(f"wrote {out}: margins " + ", ".join(f"{c} {m['margin']}" for c, m in margins.items()))


if __name__ == "__main__":
    main()
