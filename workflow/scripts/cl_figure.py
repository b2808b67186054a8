"""Aggregate continual-learning runs into one figure, its table and its provenance."""

from pathlib import Path

from replikit.io import read_json
from replikit.jobs import job
from replikit.papers import continual_learning as cl
from replikit.papers import continual_learning_analysis as an
from replikit.provenance import write_figure_record

CAPTIONS = {
    "forgetting_vs_width": "Relative forgetting CFr (accuracy), forgetting measured on the test loss, "
    "and learning accuracy LA against the width N, for NTP and for muP at a fixed gamma0 (equal at "
    "N = N0). Bands: 95% bootstrap CI over seeds.",
    "forgetting_vs_gamma": "Forgetting CF, learning accuracy LA, average accuracy AA (after the last "
    "task) and forgetting on the loss against gamma0 under muP, one line per width: the lazy-rich "
    "transition. Bands: 95% bootstrap CI over seeds.",
    "similarity": "Permuted MNIST where each task permutes only a fraction p of the pixels (innermost "
    "first); similarity = 1 - p. Left: AA against gamma0 per similarity; right: the gamma0 with the "
    "best AA per seed (grey dots) and its mean with a 95% bootstrap CI.",
    "joint_vs_sequential": "Test error (1 - mean accuracy over the tasks) against gamma0 for joint "
    "training on all tasks at once (same number of SGD steps) and for sequential training (after the "
    "last task). Bands: 95% bootstrap CI over seeds.",
}

sm = snakemake  # noqa: F821
with job(sm):
    figure, cfg = sm.wildcards.cl_figure, sm.params.cfg
    specs = cl.experiment_runs(cfg)[figure]
    subset = read_json(sm.input.manifest)["subset"]
    df = an.load_items(sm.input.runs)
    table = an.FIGURE_FUNCS[figure](df, specs, Path(sm.output.figure), sm.params.scale, subset)
    table.to_csv(sm.output.table, index=False)
    devices = [read_json(p)["device"] for p in sm.input.runs]
    write_figure_record(sm.output.provenance, sm.rule, "workflow/scripts/cl_figure.py", cfg, devices,
                        CAPTIONS[figure], sm.params.scale, subset, sm.input.runs)
