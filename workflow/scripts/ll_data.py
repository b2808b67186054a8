"""Generate one latent-lookahead task (seeded) and save it as a Hugging Face dataset."""

import shutil
from pathlib import Path

from replikit.jobs import job
from replikit.tasks import planning as pl

sm = snakemake  # noqa: F821
with job(sm):
    task, cfg = sm.wildcards.ll_task, sm.params.cfg
    ds = pl.build_dataset(task, cfg)
    bad = sum(not pl.verify(task, p, a, cfg) for p, a in zip(ds["prompt"], ds["answer"], strict=True))
    if bad:
        raise RuntimeError(f"{task}: {bad} generated answers fail their own verifier")
    out, tmp = Path(sm.output[0]), Path(sm.output[0] + ".tmp")
    shutil.rmtree(tmp, ignore_errors=True)
    ds.save_to_disk(str(tmp))
    tmp.replace(out)
    print(task, len(ds), {s: ds["split"].count(s) for s in set(ds["split"])},
          "max prompt", max(map(len, ds["prompt"])), "max answer", max(map(len, ds["answer"])))
