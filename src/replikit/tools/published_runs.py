"""The runs behind a published snapshot, committed beside it and judged again from them.

A finished run's tree holds what its training jobs wrote; the claims, the figures and the report read
only part of it. `archive` keeps that part, for every published scale, in one compressed file of JSON
lines (`docs/published/runs/<scale>.jsonl.gz`, a line per file: its path in the tree and its
content), never a checkpoint or weights. `restore` lays those files out as a tree again, and
`rejudge` runs the workflow's own claims, figure and report rules on it (Snakemake with only those
rules allowed, so nothing trains): a change to scoring code is judged on the published runs in
seconds, and `check` names every row whose verdict, mean or interval moved.

    python -m replikit.tools.publish runs SCALE TREE          # archive a finished run's tree
    python -m replikit.tools.publish rejudge SCALE             # judge again, publish the snapshot
    python -m replikit.tools.publish rejudge SCALE --check     # judge again, list what moved (exit 1)
"""

from __future__ import annotations

import gzip
import io
import json
import shutil
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from replikit.reporting.docs import PUBLISHED
from replikit.reporting.provenance import REPOSITORY

ARCHIVE = PUBLISHED / "runs"
CONFIGS = {"smoke": "config/smoke.yaml", "default": "config/config.yaml"}
# What a job wrote that the claims, figures and report read: per-run records and throughput records
# (JSON), the prepared data's manifest (the scorecard names the data by it). Weights never.
KEPT = ("results/*/runs/**/*.json", "results/*/runs/**/*.csv", "results/benchmarks/*.json",
        "results/*/benchmark*.json", "resources/data/*/manifest.json")
WEIGHTS = (".pt", ".ckpt", ".pth", ".safetensors", ".npz", ".npy", ".bin")
# The rules that judge and draw: a rejudge allows only these, so no job trains or prepares data.
JUDGING_RULES = ("_claims", "_figure")
MARK = ".replikit-rejudge"  # in a folder `rejudge` made, and may replace


def archive_path(scale: str) -> Path:
    return ARCHIVE / f"{scale}.jsonl.gz"


def kept_files(tree: Path) -> list[Path]:
    """The files of a finished tree that `archive` keeps, sorted, relative to the tree."""
    found = {p for pattern in KEPT for p in tree.glob(pattern) if p.is_file() and p.suffix not in WEIGHTS}
    return sorted(p.relative_to(tree) for p in found)


def _lines(tree: Path) -> Iterator[str]:
    for rel in kept_files(tree):
        text = (tree / rel).read_text()
        content = json.loads(text) if rel.suffix == ".json" else text
        yield json.dumps({"path": rel.as_posix(), "json" if rel.suffix == ".json" else "text": content},
                         sort_keys=True, separators=(",", ":"))


def archive(scale: str, tree: Path, out: Path | None = None) -> Path:
    """Write the kept files of `tree` as `docs/published/runs/<scale>.jsonl.gz` (replacing it; the same
    files give the same bytes: sorted, no time stamp in the gzip header)."""
    out = out or archive_path(scale)
    files = kept_files(tree)
    if not any(p.parts[0] == "results" and "runs" in p.parts for p in files):
        raise SystemExit(f"no per-run records under {tree}/results/*/runs/: is {tree} a finished run's tree "
                         "(the folder that holds results/ and logs/)?")
    buf = io.BytesIO()
    with gzip.GzipFile(filename="", mode="wb", fileobj=buf, mtime=0, compresslevel=9) as gz:
        gz.write(("\n".join(_lines(tree)) + "\n").encode())
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_suffix(".tmp")
    tmp.write_bytes(buf.getvalue())
    tmp.replace(out)
    shown = out.relative_to(REPOSITORY) if out.is_relative_to(REPOSITORY) else out
    print(f"wrote {shown}: {len(files)} files, {out.stat().st_size / 1e6:.2f} MB")
    return out


def entries(scale: str, path: Path | None = None) -> list[dict]:
    """The archived files of a scale: [{path, json | text}]."""
    with gzip.open(path or archive_path(scale), "rt") as f:
        return [json.loads(line) for line in f if line.strip()]


def restore(scale: str, tree: Path, path: Path | None = None) -> list[Path]:
    """Lay the archived files of `scale` out under `tree` (which must hold none of them yet)."""
    written = []
    for entry in entries(scale, path):
        target = tree / entry["path"]
        if target.exists():
            raise SystemExit(f"{target} exists: restore into an empty folder")
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(json.dumps(entry["json"], indent=1) + "\n" if "json" in entry else entry["text"])
        written.append(target)
    return written


def total_size() -> int:
    """Bytes of every committed run archive."""
    return sum(p.stat().st_size for p in ARCHIVE.glob("*.jsonl.gz"))


def judging_rules(config: str) -> list[str]:
    """The claims and figure rules of every paper the scale enables, and the report."""
    from replikit.core.config import load_config
    from replikit.papers import registry

    cfg = load_config(REPOSITORY / config, REPOSITORY / "workflow/schemas/config.schema.yaml")
    return [f"{registry.get(p).prefix}{suffix}" for p in cfg["papers"] for suffix in JUDGING_RULES] \
        + ["report"]


def rejudge(scale: str, work: Path, targets: str = "all", cores: int = 2) -> Path:
    """Restore `scale`'s committed runs under `work` and run the claims and figure rules (and the report,
    with targets="all"; only the scorecards with targets="claims") on them with today's code. Returns
    the output tree (the scale's outdir under `work`)."""
    from replikit.core.config import load_config
    from replikit.papers import registry

    config = CONFIGS[scale]
    cfg = load_config(REPOSITORY / config, REPOSITORY / "workflow/schemas/config.schema.yaml")
    tree = work / cfg["outdir"]
    if work.exists():
        if not (work / MARK).is_file():  # never delete a folder a rejudge did not make
            raise SystemExit(f"{work} exists and is not a rejudge's folder (no {MARK} in it); fix: pass "
                             "--work with a new folder, or remove it yourself")
        shutil.rmtree(work)
    work.mkdir(parents=True)
    (work / MARK).write_text(f"laid out by `python -m replikit.tools.publish rejudge {scale}`; "
                             "the next rejudge replaces this folder\n")
    restore(scale, tree)
    wanted = ([f"{registry.get(p).results}/claims.json" for p in cfg["papers"]] if targets == "claims"
              else [])
    cmd = [sys.executable, "-m", "snakemake", *wanted, "--snakefile", str(REPOSITORY / "Snakefile"),
           "--configfile", str(REPOSITORY / config), "--directory", str(work), "--cores", str(cores),
           "--config", "report={cost_plan: false}", "--allowed-rules", *judging_rules(config),
           "--quiet", "rules"]
    res = subprocess.run(cmd, cwd=REPOSITORY, capture_output=True, text=True)
    if res.returncode != 0:
        raise SystemExit(f"rejudging {scale}'s committed runs failed:\n{res.stderr[-4000:]}")
    return tree


# A rejudge on the committed runs reproduces the snapshot's numbers: to the last bit on the machine
# that made it, and within this on another CPU (numpy's reductions may round otherwise there).
EXACT = {"absolute": 1e-9, "relative": 1e-9}


def moved_rows(scale: str, tree: Path, snapshot: dict | None = None) -> list[str]:
    """Every row whose verdict, mean, interval or seed counts in the rejudged `tree` differ from the
    committed snapshot of `scale` (`scorecard_reference.compare` at EXACT); [] when none."""
    from replikit.scoring.scorecard_reference import compare, summarize

    snapshot = snapshot or json.loads((PUBLISHED / f"scorecard-{scale}.json").read_text())
    cards = [json.loads(p.read_text()) for p in sorted((tree / "results").glob("*/claims.json"))]
    return compare({"papers": snapshot["papers"], "tolerance": EXACT}, summarize(cards))


def check(scale: str, work: Path) -> int:
    """Judge `scale`'s committed runs again (scorecards only) and print what moved; 1 when any row did."""
    return report(scale, moved_rows(scale, rejudge(scale, work, targets="claims")))


def report(scale: str, moved: list[str]) -> int:
    """Print what `check` found: the rows that moved and the command that republishes; 1 when any did."""
    if not moved:
        print(f"{scale}: the committed runs, judged with today's code, give the published snapshot")
        return 0
    print(f"{scale}: judged with today's code, the committed runs no longer give the published snapshot "
          f"(docs/published/scorecard-{scale}.json):\n  " + "\n  ".join(moved)
          + f"\nIf the change is deliberate, republish: python -m replikit.tools.publish rejudge {scale} && "
          "python -m replikit.reporting.docs, and commit the snapshot with the change, saying why.")
    return 1
