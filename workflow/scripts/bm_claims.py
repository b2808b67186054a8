"""Judge the benign-memorization claims from the aggregated runs."""

from replikit.aggregate import final_rows
from replikit.claims import judge, write_scorecard
from replikit.io import read_json
from replikit.jobs import job
from replikit.papers import benign_memorization as bm
from replikit.papers import benign_memorization_analysis as an
from replikit.provenance import record

sm = snakemake  # noqa: F821
with job(sm):
    cfg, stats = sm.params.cfg, sm.params.stats
    hist = an.load_histories(sm.input.metrics)
    results = {"history": hist, "final": final_rows(hist), "layers": an.load_layers(sm.input.layers)}
    claims = an.claims(bm.experiment_runs(cfg), cfg["augmentation"])
    manifest, seeds = read_json(sm.input.manifest), sorted(hist["seed"].unique().tolist())
    rows = judge(claims, results, cfg, stats, sm.params.paper, seeds, manifest.get("subset", False))
    write_scorecard(
        sm.output[0], bm.PAPER, "The Curious Case of Benign Memorization (Anagnostidis et al., ICLR 2023)",
        sm.params.scale, manifest, seeds, rows,
        record(sm.rule, "workflow/scripts/bm_claims.py", cfg,
               [read_json(p)["device"] for p in sm.input.metrics]))
