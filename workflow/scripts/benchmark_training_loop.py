"""Benchmark: pipeline training loop vs a bare forward/backward loop on the same tensors."""

import torch

from replikit import data
from replikit import device as dev
from replikit.benchmark import loop_throughput
from replikit.io import read_json, write_json
from replikit.jobs import job

sm = snakemake  # noqa: F821
with job(sm) as device:
    b = sm.params.bench
    tensors = data.load(sm.input.tensors, read_json(sm.input.manifest))
    res = loop_throughput(tensors["x_train"], tensors["y_train"], sm.params.model, b["batch_size"],
                          b["steps"], device)
    out = {"device": dev.describe(device), "threads": torch.get_num_threads(), "model": sm.params.model,
           "batch_size": b["batch_size"], "steps": b["steps"],
           **{k: round(v, 3) for k, v in res.items()}}
    write_json(sm.output[0], out)
    print(out)
