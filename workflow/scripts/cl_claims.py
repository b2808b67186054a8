"""Judge the continual-learning claims from the aggregated runs."""

from replikit.claims import judge, write_scorecard
from replikit.io import read_json
from replikit.jobs import job
from replikit.papers import continual_learning as cl
from replikit.papers import continual_learning_analysis as an
from replikit.provenance import record

sm = snakemake  # noqa: F821
with job(sm):
    cfg, stats = sm.params.cfg, sm.params.stats
    df = an.load_items(sm.input.metrics)
    manifest, seeds = read_json(sm.input.manifest), sorted(df["seed"].unique().tolist())
    rows = judge(an.claims(cl.experiment_runs(cfg), cfg), {"items": df}, cfg, stats, sm.params.paper, seeds,
                 manifest.get("subset", False))
    write_scorecard(
        sm.output[0], cl.PAPER,
        "The Importance of Being Lazy: feature learning, width and forgetting (Graldi et al., ICML 2025)",
        sm.params.scale, manifest, seeds, rows,
        record(sm.rule, "workflow/scripts/cl_claims.py", cfg,
               [read_json(p)["device"] for p in sm.input.metrics]))
