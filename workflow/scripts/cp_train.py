"""Sample one cold-posterior condition (one seed) at every temperature; record the ensemble metrics."""

import shutil
import time

from replikit import device as dev
from replikit.io import write_json
from replikit.jobs import job
from replikit.papers.cold_posterior import load_run

sm = snakemake  # noqa: F821
with job(sm) as device:
    run = load_run(sm.wildcards.cp_run, sm.wildcards.seed, sm.params.cfg, sm.input.tensors,
                   sm.input.manifest, device)
    start = time.time()
    results = run.train(sm.params.workdir)
    write_json(sm.output[0], {
        "run": run.spec.name, "seed": run.seed, "spec": run.spec.__dict__,
        "temperatures": {f"{t:g}": r for t, r in results.items()}, "device": dev.describe(device),
        "elapsed_s": round(time.time() - start, 1), "n_train": run.n, "num_data": run.num_data,
    })
    shutil.rmtree(sm.params.workdir, ignore_errors=True)
