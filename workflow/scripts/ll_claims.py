"""Judge the latent-lookahead claims from the aggregated runs."""

from replikit.aggregate import final_rows
from replikit.claims import judge, write_scorecard
from replikit.io import read_json
from replikit.jobs import job
from replikit.papers import latent_lookahead as ll
from replikit.papers import latent_lookahead_analysis as an
from replikit.provenance import record

sm = snakemake  # noqa: F821
with job(sm):
    cfg, stats = sm.params.cfg, sm.params.stats
    hist = an.load_histories(sm.input.metrics)
    results = {"history": hist, "final": final_rows(hist)}
    seeds = sorted(hist["seed"].unique().tolist())
    rows = judge(an.claims(ll.experiment_runs(cfg)), results, cfg, stats, sm.params.paper, seeds)
    write_scorecard(
        sm.output[0], ll.PAPER, "Thinking into the Future: Latent Lookahead Training for Transformers "
        "(Noci et al., 2026)", sm.params.scale, None, seeds, rows,
        record(sm.rule, "workflow/scripts/ll_claims.py", cfg,
               [read_json(p)["device"] for p in sm.input.metrics]))
