"""Aggregate latent-lookahead runs into one figure, its table and its provenance."""

from pathlib import Path

from replikit.aggregate import final_rows
from replikit.io import read_json
from replikit.jobs import job
from replikit.papers import latent_lookahead as ll
from replikit.papers import latent_lookahead_analysis as an
from replikit.provenance import write_figure_record

CAPTIONS = {
    "accuracy_table": "Held-out exact match (scored by each task's verifier) of next-token prediction, "
    "pause tokens and latent lookahead per task; bars: mean and 95% bootstrap CI over seeds, dots: "
    "seeds, red stars: the paper's Table 1. The table also lists tau and the paper's numbers.",
    "tau_scaling": "Exact match of latent lookahead (bidirectional latents) against the number of "
    "latent steps tau on one task; band: 95% CI over seeds, dots: seeds; dashed: NTP mean.",
    "training_curves": "Held-out exact match against optimizer step for each method and task; bands: "
    "95% CI over seeds.",
    "ablation_mask": "Latent lookahead with bidirectional versus causal attention among the latents of "
    "a thought (same tau); bars: mean and 95% CI over seeds, dots: seeds.",
}

sm = snakemake  # noqa: F821
with job(sm):
    figure, cfg = sm.wildcards.ll_figure, sm.params.cfg
    specs = ll.experiment_runs(cfg)[figure]
    hist = an.load_histories(sm.input.runs)
    out = Path(sm.output.figure)
    if figure == "training_curves":
        table = an.figure_training_curves(hist, specs, out, sm.params.scale)
    else:
        make = {"accuracy_table": an.figure_accuracy_table, "tau_scaling": an.figure_tau_scaling,
                "ablation_mask": an.figure_ablation_mask}[figure]
        table = make(final_rows(hist), specs, out, sm.params.scale)
    table.to_csv(sm.output.table, index=False)
    write_figure_record(sm.output.provenance, sm.rule, "workflow/scripts/ll_figure.py", cfg,
                        [read_json(p)["device"] for p in sm.input.runs], CAPTIONS[figure],
                        sm.params.scale, False, sm.input.runs)
