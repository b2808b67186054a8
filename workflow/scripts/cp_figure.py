"""Aggregate cold-posterior runs into one figure, its table and its provenance."""

from pathlib import Path

from replikit.io import read_json
from replikit.jobs import job
from replikit.papers import cold_posterior as cp
from replikit.papers import cold_posterior_analysis as an
from replikit.provenance import write_figure_record

CAPTIONS = {
    "temperature_sweep": "Test accuracy (left) and NLL (right) of the SG-MCMC posterior ensemble against the "
    "temperature T (posterior tempering), with and without augmentation; dashed: SGD (MAP, the T=0 chain's "
    "last iterate). Bands: 95% bootstrap CI over seeds.",
    "curation": "Synthetic curation without augmentation: training labels kept only where S simulated "
    "annotators agree. Left: test NLL against T per S; right: the CPE size, NLL at T=1 minus the best NLL "
    "over T, against S. Bands/bars: 95% CI over seeds.",
    "prior": "Left: CPE size (NLL at T=1 minus the best NLL over T) against the std of the Gaussian prior "
    "(augmented data). Right: test NLL against T when T tempers the whole posterior, the likelihood only, "
    "or the prior only (main prior std). Bands/bars: 95% CI over seeds.",
    "invariance": "K fixed D4 views per image (view 0 = the image): left, log10 of the NLL-optimal T "
    "against K for the plain CNN and the D4-invariant one, with 1/K dashed; right, the seed-mean NLL "
    "curves. Bands: 95% CI over seeds (the temperature grid is discrete).",
}

sm = snakemake  # noqa: F821
with job(sm):
    figure, cfg = sm.wildcards.cp_figure, sm.params.cfg
    specs = cp.experiment_runs(cfg)[figure]
    subset = read_json(sm.input.manifest)["subset"]
    df = an.load_results(sm.input.runs)
    table = an.FIGURE_FUNCS[figure](df, specs, Path(sm.output.figure), sm.params.scale, subset)
    table.to_csv(sm.output.table, index=False)
    write_figure_record(sm.output.provenance, sm.rule, "workflow/scripts/cp_figure.py", cfg,
                        [read_json(p)["device"] for p in sm.input.runs], CAPTIONS[figure],
                        sm.params.scale, subset, sm.input.runs)
