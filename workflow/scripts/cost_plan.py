"""The plan of the paper scale (replikit.plan.bill) as JSON, for the report's "Cost of the paper scale":
config/paper.yaml with the running config's enabled papers, every step counted under FakeTensorMode
on the CPU with the rule's threads (about 10 minutes on one core for every paper)."""

import json
import sys
import time
from pathlib import Path

from replikit.core.jobs import job
from replikit.plan import bill as pl

sm = snakemake  # noqa: F821
with job(sm, cpu_only=True):
    start = time.perf_counter()
    config = pl.load([sm.input.config], {"papers": list(sm.params.papers)})
    peaks = {a: pl.ACCELERATORS[a] for a in sm.params.accelerators}
    jobs = pl.plan(config, pl.gpu_requests(sm.input.profile), peaks, log=sys.stdout)
    print(pl.report(jobs, "H100", list(peaks), pl.UTILISATION, pl.LAUNCH_S, None))
    doc = pl.document(config, [sm.params.source], jobs, peaks, pl.UTILISATION, pl.LAUNCH_S)
    Path(sm.output[0]).write_text(json.dumps(doc, indent=1))
    print(f"planned {len(jobs)} jobs in {time.perf_counter() - start:.0f} s")
