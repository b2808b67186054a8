"""Sum the wall seconds (`s`) and CPU seconds (`cpu_time`) of the Snakemake benchmark files under a tree's
benchmark folder; with substrings, only the files whose path contains one of them, each listed:

    python job_seconds.py <tree>/scales/smoke/logs/benchmarks
    python job_seconds.py <tree>/scales/smoke/logs/benchmarks param-sp sudoku4_singles ...
"""

import csv
import sys
from pathlib import Path

root, only = Path(sys.argv[1]), sys.argv[2:]
files = [f for f in sorted(root.rglob("*.tsv")) if not only or any(s in str(f) for s in only)]
wall = cpu = 0.0
for f in files:
    rows = list(csv.DictReader(f.open(), delimiter="\t"))
    s, c = sum(float(r["s"]) for r in rows), sum(float(r["cpu_time"]) for r in rows)
    wall, cpu = wall + s, cpu + c
    if only:
        print(f"{f.relative_to(root)}\t{s:.2f}")
print(f"{root}: {len(files)} benchmark files, {wall:.1f} job-s, {cpu:.1f} CPU-s")
