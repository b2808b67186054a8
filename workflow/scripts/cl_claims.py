"""Judge the continual-learning claims from the aggregated runs."""

from replikit.claims import evaluate, write_scorecard
from replikit.io import read_json
from replikit.jobs import job
from replikit.papers import continual_learning as cl
from replikit.papers import continual_learning_analysis as an
from replikit.provenance import record

sm = snakemake  # noqa: F821
with job(sm):
    cfg, stats = sm.params.cfg, sm.params.stats
    df = an.load_items(sm.input.metrics)
    rows = evaluate(an.claims(cl.experiment_runs(cfg), cfg), {"items": df}, stats["ci_level"],
                    stats["n_boot"], stats["min_seeds"])
    write_scorecard(
        sm.output[0], cl.PAPER,
        "The Importance of Being Lazy: feature learning, width and forgetting (Graldi et al., ICML 2025)",
        sm.params.scale, read_json(sm.input.manifest), df["seed"].unique().tolist(), rows,
        record(sm.rule, "workflow/scripts/cl_claims.py", cfg,
               [read_json(p)["device"] for p in sm.input.metrics]))
