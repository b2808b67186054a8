"""Train one latent-lookahead run (one seed) and record its held-out exact-match history."""

import time
from pathlib import Path

from replikit import device as dev
from replikit.io import write_json
from replikit.jobs import job
from replikit.papers.latent_lookahead import load_run

sm = snakemake  # noqa: F821
with job(sm) as device:
    run = load_run(sm.wildcards.ll_run, sm.wildcards.seed, sm.params.cfg, sm.input.data, device)
    start = time.time()
    history = run.train(checkpoint=sm.params.checkpoint)
    elapsed = time.time() - start
    write_json(sm.output.metrics, {
        "run": run.spec.name, "seed": run.seed, "spec": run.spec.__dict__, "tau": run.tau,
        "answer_len": run.answer_len, "history": history, "final": history[-1],
        "device": dev.describe(device), "elapsed_s": round(elapsed, 1), "n_train": run.n,
        "n_eval": int(run.test_prompt.shape[0]), "steps": history[-1]["step"],
    })
    Path(sm.params.checkpoint).unlink(missing_ok=True)
