"""Train one benign-memorization run (one seed) and record its evaluation history."""

import time
from pathlib import Path

from replikit import data
from replikit import device as dev
from replikit.io import read_json, torch_save, write_json
from replikit.jobs import job
from replikit.papers.benign_memorization import Run, RunSpec

sm = snakemake  # noqa: F821
with job(sm) as device:
    spec = RunSpec.parse(sm.wildcards.bm_run)
    seed = int(sm.wildcards.seed)
    tensors = data.load(sm.input.tensors, read_json(sm.input.manifest))
    run = Run(spec, sm.params.cfg, tensors, seed, device)
    start = time.time()
    history = run.train(checkpoint=sm.params.checkpoint)
    elapsed = time.time() - start
    torch_save(sm.output.model, {"state_dict": run.model.state_dict(), "run": spec.name, "seed": seed,
                                 "model": sm.params.cfg["model"]})
    write_json(sm.output.metrics, {
        "run": spec.name, "seed": seed, "spec": spec.__dict__, "history": history,
        "final": history[-1], "device": dev.describe(device), "elapsed_s": round(elapsed, 1),
        "n_train": run.n, "epochs": sm.params.cfg["epochs"],
    })
    Path(sm.params.checkpoint).unlink(missing_ok=True)
