"""Judge the cold-posterior claims CPE-1..CPE-5 from the aggregated runs."""

from replikit.claims import judge, write_scorecard
from replikit.io import read_json
from replikit.jobs import job
from replikit.papers import cold_posterior as cp
from replikit.papers import cold_posterior_analysis as an
from replikit.provenance import record

sm = snakemake  # noqa: F821
with job(sm):
    cfg, stats = sm.params.cfg, sm.params.stats
    df = an.load_results(sm.input.runs)
    manifest, seeds = read_json(sm.input.manifest), sorted(df["seed"].unique().tolist())
    rows = judge(an.claims(cp.experiment_runs(cfg), cfg), {"results": df}, cfg, stats, sm.params.paper,
                 seeds, manifest.get("subset", False))
    write_scorecard(
        sm.output[0], cp.PAPER, "The cold posterior effect: curation, augmentation, prior, invariance "
        "(Noci et al., NeurIPS 2021; Bachmann et al., ICML 2022)", sm.params.scale, manifest, seeds, rows,
        record(sm.rule, "workflow/scripts/cp_claims.py", cfg,
               [read_json(p)["device"] for p in sm.input.runs]))
