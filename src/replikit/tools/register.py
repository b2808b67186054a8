"""Register a paper's claims before the runs that judge them (issue 85).

    python -m replikit.tools.register PAPER [CLAIM ...] --scale SCALE [--initial]

writes each claim's fingerprint at SCALE (replikit.scoring.registration: its code, definition and
settings) and the seeds it will be judged on there (the fresh seed set that lists it, else the
paper's seeds) into `config/registrations/<paper>.json`, with today's date. Commit the file before
the runs. It refuses seeds that already have results for the paper at that scale, in the committed
runs (docs/published/runs/SCALE.jsonl.gz) or in this checkout's results tree: a claim changed after
its seeds were seen is registered again only on fresh seeds (config key <paper>.fresh_seeds), and
until they judge it, its row is counted apart. An unchanged claim keeps its seeds (no shopping for
others), unless the scale's `seen_seeds` lists it and its entry was written after its seeds had results:
then its first fresh set may be registered. `--initial` records a claim that has no registration
yet on seeds that already have results, marked `after_results` (the lock's first entries, 2026-12-07).
"""

from __future__ import annotations

import argparse
import datetime
import re
import sys
from pathlib import Path

from replikit.papers import registry
from replikit.papers.glue import fresh_seeds
from replikit.plan.bill import load
from replikit.scoring.registration import LOCKS, changes, claim_functions, fingerprint, read_lock, write_lock
from replikit.tools import published_runs

REPOSITORY = Path(__file__).resolve().parents[3]
CONFIGS = {"default": [], "smoke": ["config/smoke.yaml"]}
SEED_DIR = re.compile(r"^results/(?P<paper>[^/]+)/runs/[^/]+/seed(?P<seed>\d+)/")


class RegistrationRefused(SystemExit):
    """Seeds that already have results, offered for a claim that changed or was never registered."""


def judged_seeds(config: dict, paper: str, claim_id: str) -> list[int]:
    """The seeds a claim's headline is judged on at this config: the fresh set that lists it, else the
    paper's seeds."""
    for block in fresh_seeds(config, paper):
        if claim_id in block["claims"]:
            return sorted(int(s) for s in block["seeds"])
    return sorted(int(s) for s in registry.get(paper).seeds(config[paper], config["seeds"]))


def seen_claims(config: dict, paper: str) -> list[str]:
    """The claims config key <paper>.seen_seeds lists at this config (judged on seen seeds only)."""
    return list(((config.get(paper) or {}).get("seen_seeds") or {}).get("claims") or [])


def seeds_with_results(paper: str, scale: str, config: dict, root: Path = REPOSITORY) -> dict[int, str]:
    """Seed -> where a result of `paper` at `scale` on that seed was found: the committed runs, or this
    checkout's results tree for the scale (its `outdir`)."""
    found: dict[int, str] = {}
    archive = published_runs.archive_path(scale)
    if scale in published_runs.CONFIGS and archive.exists():
        for entry in published_runs.entries(scale, archive):
            m = SEED_DIR.match(entry["path"])
            if m and m["paper"] == paper:
                found.setdefault(int(m["seed"]), f"the committed runs ({archive.name})")
    tree = root / config.get("outdir", ".")
    for path in (tree / "results" / paper / "runs").glob("*/seed*/metrics.json"):
        found.setdefault(int(path.parent.name.removeprefix("seed")), f"the results tree {tree}")
    return found


def register(paper: str, ids: list[str], scale: str, initial: bool = False, today: str | None = None,
             locks: Path = LOCKS, root: Path = REPOSITORY) -> dict[str, list[str]]:
    """Register `ids` (every claim of the paper when empty) at `scale`; claim id -> what changed (an
    entry written) or [] (already registered as it is). Refuses seeds that have results."""
    config = load([str(REPOSITORY / p) for p in CONFIGS[scale]])
    spec, cfg = registry.get(paper), config[paper]
    claims = spec.claims(spec.experiments(cfg), cfg)
    functions = claim_functions(sys.modules[spec.claims.__module__], [c.id for c in claims])
    lock, done, results = read_lock(paper, locks), {}, seeds_with_results(paper, scale, config, root)
    for claim in claims:
        if ids and claim.id not in ids:
            continue
        now, seeds = fingerprint(functions[claim.id], claim, cfg), judged_seeds(config, paper, claim.id)
        entry = lock.get(claim.id, {}).get(scale)
        moved = changes(entry, now, seeds)
        done[claim.id] = moved
        if not moved:
            continue
        judged = [s for s in (entry or {}).get("seeds", []) if s in results]
        # a claim the scale's seen_seeds lists was fixed after its seeds had been seen: its first lock
        # entry (after_results) was no pre-registration, and a fresh set is its remedy, not shopping
        seen_first = bool((entry or {}).get("after_results")) and claim.id in seen_claims(config, paper)
        if moved == ["seeds"] and judged and not seen_first:
            raise RegistrationRefused(
                f"{paper} {claim.id} at {scale}: it is unchanged, and its registered seeds {judged} already "
                "have results: their verdict is its headline, and other seeds are not shopped for")
        seen = {s: results[s] for s in seeds if s in results}
        if seen and not (initial and entry is None):
            where = "; ".join(sorted({w for w in seen.values()}))
            raise RegistrationRefused(
                f"{paper} {claim.id} at {scale}: seeds {sorted(seen)} already have results ({where}), and "
                f"the claim {'is not registered' if entry is None else 'changed: ' + ', '.join(moved)}. "
                "A claim is registered before the runs that judge it: list it with seeds never run in "
                f"config key {paper}.fresh_seeds, register it, commit, then run them")
        lock.setdefault(claim.id, {})[scale] = {**now, "seeds": seeds, "after_results": bool(seen),
                                                "registered": today or datetime.date.today().isoformat()}
    unknown = sorted(set(ids) - {c.id for c in claims})
    if unknown:
        raise SystemExit(f"not a claim of {paper}: {', '.join(unknown)}")
    write_lock(paper, lock, locks)
    return done


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("paper")
    ap.add_argument("claims", nargs="*", help="claim ids (default: every claim of the paper)")
    ap.add_argument("--scale", choices=sorted(CONFIGS), required=True)
    ap.add_argument("--initial", action="store_true", help="a first entry on seeds that have results")
    args = ap.parse_args(argv)
    done = register(args.paper, args.claims, args.scale, args.initial)
    for cid, moved in done.items():
        print(f"{args.paper} {cid} at {args.scale}: " + ("registered (" + ", ".join(moved) + ")" if moved
                                                        else "already registered as it is"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
