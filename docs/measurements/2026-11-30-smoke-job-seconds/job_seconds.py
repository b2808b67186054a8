"""Sum the wall seconds (`s`) and CPU seconds (`cpu_time`) of every Snakemake benchmark file under a
tree's benchmark folder: `python job_seconds.py <tree>/scales/smoke/logs/benchmarks`."""

import csv
import sys
from pathlib import Path

root = Path(sys.argv[1])
files = sorted(root.rglob("*.tsv"))
wall = cpu = 0.0
for f in files:
    rows = list(csv.DictReader(f.open(), delimiter="\t"))
    wall += sum(float(r["s"]) for r in rows)
    cpu += sum(float(r["cpu_time"]) for r in rows)
print(f"{root}: {len(files)} benchmark files, {wall:.1f} job-s, {cpu:.1f} CPU-s")
