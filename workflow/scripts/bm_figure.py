"""Aggregate benign-memorization runs into one figure, its table and its provenance."""

from pathlib import Path

from replikit.aggregate import final_rows
from replikit.io import read_json
from replikit.jobs import job
from replikit.papers import benign_memorization as bm
from replikit.papers import benign_memorization_analysis as an
from replikit.provenance import write_figure_record

CAPTIONS = {
    "probe_vs_epoch": "k-NN probe test accuracy (left) and training accuracy on the (random) training "
    "labels (right) over training, for 0% and 100% random labels with and without augmentation; "
    "dashed: the untrained network. Bands: 95% bootstrap CI over seeds.",
    "probe_per_layer": "k-NN probe test accuracy at each stage of the final networks (left; conv maps "
    "average-pooled to 2x2) and leave-one-out k-NN agreement with the training labels (right), "
    "which measures where the random labels are memorized. Bars: 95% CI over seeds.",
    "augmentation_diversity": "100% random labels, each image seen only through a fixed set of K "
    "augmentations: k-NN probe accuracy (left) and memorization of the random labels (right), "
    "scored on the training views the network saw and on clean images, against K. Bars: 95% CI "
    "over seeds.",
    "capacity": "Each of the K augmentations of an image gets its own random label: training accuracy "
    "reached on the (view, label) pairs against K. The budget is fixed in epochs (as in the paper), "
    "so each pair is seen about epochs/K times. Bars: 95% CI over seeds.",
}

sm = snakemake  # noqa: F821
with job(sm):
    figure, cfg = sm.wildcards.bm_figure, sm.params.cfg
    specs = bm.experiment_runs(cfg)[figure]
    subset = read_json(sm.input.manifest)["subset"]
    out = Path(sm.output.figure)
    if figure == "probe_per_layer":
        table = an.figure_probe_per_layer(an.load_layers(sm.input.runs), specs, out, sm.params.scale,
                                          subset)
        devices = [read_json(p)["device"] for p in sm.input.runs]
    else:
        hist = an.load_histories(sm.input.runs)
        devices = [read_json(p)["device"] for p in sm.input.runs]
        if figure == "probe_vs_epoch":
            table = an.figure_probe_vs_epoch(hist, specs, out, sm.params.scale, subset)
        elif figure == "augmentation_diversity":
            table = an.figure_augmentation_diversity(final_rows(hist), specs, out, sm.params.scale,
                                                     subset)
        else:
            table = an.figure_capacity(final_rows(hist), specs, out, sm.params.scale, subset)
    table.to_csv(sm.output.table, index=False)
    write_figure_record(sm.output.provenance, sm.rule, "workflow/scripts/bm_figure.py", cfg, devices,
                        CAPTIONS[figure], sm.params.scale, subset, sm.input.runs)
