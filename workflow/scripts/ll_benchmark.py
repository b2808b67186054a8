"""Training tokens/s of NTP, pause and lookahead on the same model and batch."""

import torch

from replikit import device as dev
from replikit.io import write_json
from replikit.jobs import job
from replikit.papers import latent_lookahead as ll

sm = snakemake  # noqa: F821
with job(sm) as device:
    b = sm.params.bench
    res = ll.benchmark(sm.params.cfg, ll.load_dataset(sm.input.data), device, b["batch_size"], b["steps"])
    out = {"device": dev.describe(device), "threads": torch.get_num_threads(), "task": sm.params.cfg["task"],
           "model": sm.params.cfg["model"], "steps": b["steps"], **res}
    write_json(sm.output[0], out)
    print(out)
