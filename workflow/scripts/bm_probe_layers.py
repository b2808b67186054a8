"""k-NN probe of every stage of a trained benign-memorization model (and of its initialisation)."""

import torch

from replikit import data
from replikit import device as dev
from replikit.io import read_json, write_json
from replikit.jobs import job
from replikit.papers.benign_memorization import Run, RunSpec

sm = snakemake  # noqa: F821
with job(sm) as device:
    spec = RunSpec.parse(sm.wildcards.bm_run)
    seed = int(sm.wildcards.seed)
    tensors = data.load(sm.input.tensors, read_json(sm.input.manifest))
    run = Run(spec, sm.params.cfg, tensors, seed, device)
    run.model.load_state_dict(torch.load(sm.input.model, map_location=device)["state_dict"])
    report = run.layer_report()
    write_json(sm.output[0], {"run": spec.name, "seed": seed, "stages": run.model.stage_names,
                              "device": dev.describe(device), **report})
