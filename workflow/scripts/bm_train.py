"""Train one benign-memorization run (one seed) and record its evaluation history."""

import time
from pathlib import Path

from replikit import device as dev
from replikit.io import torch_save, write_json
from replikit.jobs import job
from replikit.papers.benign_memorization import load_run

sm = snakemake  # noqa: F821
with job(sm) as device:
    run = load_run(sm.wildcards.bm_run, sm.wildcards.seed, sm.params.cfg, sm.input.tensors,
                   sm.input.manifest, device)
    start = time.time()
    history = run.train(checkpoint=sm.params.checkpoint)
    elapsed = time.time() - start
    torch_save(sm.output.model, {"state_dict": run.model.state_dict(), "run": run.spec.name,
                                 "seed": run.seed, "model": sm.params.cfg["model"]})
    write_json(sm.output.metrics, {
        "run": run.spec.name, "seed": run.seed, "spec": run.spec.__dict__, "history": history,
        "final": history[-1], "device": dev.describe(device), "elapsed_s": round(elapsed, 1),
        "n_train": run.n, "epochs": sm.params.cfg["epochs"],
    })
    Path(sm.params.checkpoint).unlink(missing_ok=True)
