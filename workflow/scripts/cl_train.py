"""Train one continual-learning run (a width or gamma0 sweep of one seed) and record its metrics."""

import time
from pathlib import Path

from replikit import device as dev
from replikit.io import write_json
from replikit.jobs import job
from replikit.papers import continual_learning as cl

sm = snakemake  # noqa: F821
with job(sm) as device:
    spec, seed, cfg = cl.RunSpec.parse(sm.wildcards.cl_run), int(sm.wildcards.seed), sm.params.cfg
    data = cl.load_data(spec, sm.input.tensors, sm.input.manifest)
    start = time.time()
    items = cl.run_sweep(spec, cfg, data, seed, device, checkpoint=sm.params.checkpoint)
    write_json(sm.output[0], {"run": spec.name, "seed": seed, "config": cfg, "items": items,
                              "device": dev.describe(device), "elapsed_s": round(time.time() - start, 1)})
    Path(sm.params.checkpoint).unlink(missing_ok=True)
