"""k-NN probe of every stage of a trained benign-memorization model (and of its initialisation)."""

import torch

from replikit import device as dev
from replikit.io import write_json
from replikit.jobs import job
from replikit.papers.benign_memorization import load_run

sm = snakemake  # noqa: F821
with job(sm) as device:
    run = load_run(sm.wildcards.bm_run, sm.wildcards.seed, sm.params.cfg, sm.input.tensors,
                   sm.input.manifest, device)
    run.model.load_state_dict(torch.load(sm.input.model, map_location=device)["state_dict"])
    write_json(sm.output[0], {"run": run.spec.name, "seed": run.seed, "stages": run.model.stage_names,
                              "device": dev.describe(device), **run.layer_report()})
