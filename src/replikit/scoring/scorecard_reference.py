"""The committed smoke scorecard: a guard against verdicts that drift silently between commits.

`tests/reference/smoke_scorecard.json` holds every smoke claim's verdict and each part's verdict,
mean and stability (replikit.scoring.stability; shown, not guarded beyond its presence) and whether
it carries no evidence, and the same for the claim's falsifier. CI's smoke run compares its
scorecards with it (tests/test_workflow.py) and fails on any changed verdict or evidence, on a claim
or part that appeared or vanished, and on a mean that moved by more than TOLERANCE, printing one
line per difference.

Every job computes at one pinned kernel level (replikit.core.numerics: AVX2 in PyTorch, MKL, oneDNN
and NumPy), so the smoke DAG gives the same numbers on every Intel x86-64 CPU with AVX2, and one
reference serves them all: the reference names the machine and kernel level it was written at, and
the guard's message names this machine's. Where the pins do not hold (another vendor's CPU, whose MKL
ignores its pin), tests/test_workflow.py shows a difference as an expected failure.

Updating the reference is a deliberate commit whose message says why:

    python -m replikit.scoring.scorecard_reference write results/*/claims.json
    python -m replikit.scoring.scorecard_reference check results/*/claims.json   # the diff, without writing

A write names the machine it runs on, so run it where the smoke DAG ran.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from pathlib import Path

from replikit.core.io import read_json, write_json

REFERENCE = Path(__file__).resolve().parents[3] / "tests" / "reference" / "smoke_scorecard.json"
# A mean or interval bound may move by at most ABSOLUTE + RELATIVE * |reference|. The kernels are
# pinned (replikit.core.numerics): two pinned smoke runs on one machine agreed bitwise in every number,
# and a pinned step gave bitwise the same weights on an Intel CPU with AVX512 and on an emulated one
# without it (docs/measurements/2026-12-07-pinned-numerics), so the tolerance is the JSON round trip's,
# not a CPU's. Where the pins do not hold (another vendor's CPU), tests/test_workflow.py shows the
# differences as an expected failure instead.
TOLERANCE = {"absolute": 1e-9, "relative": 1e-9}


def _parts(parts: list[dict]) -> dict:
    """Per part the evidence a reader audits: its verdict, mean, interval (`ci`: low, high), seeds
    (`n_seeds`) and how many agree (`n_agree`), the test's p (`p`) and stability, and `no_evidence`
    where it carries none (a falsifier made only of such parts is not measured:
    replikit.scoring.claims.falsifier_measured)."""
    return {p["label"]: {"verdict": p["verdict"], "mean": p["mean"],
                         "ci": [p.get("ci_low"), p.get("ci_high")], "n_seeds": p.get("n_seeds"),
                         "n_agree": p.get("n_agree"), "p": p.get("p_value"),
                         "stability": _rounded(p.get("stability")),
                         **({"no_evidence": True} if p.get("no_evidence") else {})} for p in parts}


def definition(statement: str, statistic: str, rule: str, falsifier_setting: str = "",
               quote: str = "") -> str:
    """A short digest of what a claim is: its statement, statistic, rule, falsifier's setting and the
    source sentence it quotes. A row judged under another definition is not the claim declared today
    (replikit.tools.publish refuses it; `compare` names it)."""
    text = json.dumps([statement, statistic, rule, falsifier_setting, quote])
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _claim(row: dict) -> dict:
    """A claim's verdict and parts; with its falsifier's verdict and parts where it has one, and the
    digest of its definition."""
    out = {"verdict": row["verdict"], "seeds": row.get("seeds"), "parts": _parts(row["parts"]),
           "stability": _rounded(row.get("stability")),  # the row's, jointly (claims.row_stability)
           "definition": definition(row.get("statement", ""), row.get("statistic", ""), row.get("rule", ""),
                                    (row.get("falsifier") or {}).get("setting", ""),
                                    (row.get("source") or {}).get("quote", ""))}
    falsifier = row.get("falsifier")
    if falsifier:
        out["falsifier"] = {"verdict": falsifier["verdict"], "parts": _parts(falsifier["parts"])}
        if "discrimination" in falsifier:  # whether it tells the settings apart (claims.discrimination)
            found = falsifier["discrimination"]
            out["falsifier"]["discrimination"] = {"tells": found["tells"], "fooled": found["fooled"],
                                                  "two_sided": found["two_sided"],
                                                  "contrast": _parts(found["contrast"])}
    changed = (row.get("registration") or {}).get("changed")
    if changed:  # what moved since its registration at this scale (replikit.scoring.registration)
        out["registration"] = {"changed": changed, "registered": row["registration"].get("registered")}
    if row.get("seen_only"):  # judged on seen seeds only at this scale (config key <paper>.seen_seeds)
        out["seen_only"] = True
    if row.get("seed_sets"):  # judged on seen and fresh seeds: the headline above is the fresh set's
        out["seeds"] = row["seeds"]
        out["seed_sets"] = [{"seeds": s["seeds"], "role": s["role"], "headline": s["headline"],
                             "verdict": s["verdict"], "parts": _parts(s["parts"])} for s in row["seed_sets"]]
    return out


def summarize(cards: list[dict]) -> dict:
    """What the guard compares: per paper and claim, the verdict, and per part its verdict, mean and
    whether it carries no evidence (its stability is recorded, and only its presence is checked); the
    same for the claim's falsifier. Rows judged on two seed sets also record both (`seed_sets`; shown by
    the published snapshot, not compared). `claims_by` (not compared): the commit whose code judged the
    claims, with `dirty` where any claims job ran uncommitted analysis code (the published snapshot
    names it: replikit.tools.publish)."""
    papers = {card["paper"]: {c["id"]: _claim(c) for c in card["claims"]}
              for card in sorted(cards, key=lambda c: c["paper"])}
    scales = sorted({card["scale"] for card in cards})
    out = {"scale": ",".join(scales), "tolerance": TOLERANCE, "papers": papers}
    provenance = [card.get("provenance") or {} for card in cards]
    commits = sorted({p.get("git_commit") for p in provenance if p.get("git_commit")})
    if commits:
        out["claims_by"] = {"commit": commits[0] if len(commits) == 1 else "several: " + ", ".join(commits),
                            "dirty": any(p.get("analysis_uncommitted") for p in provenance)
                            or any(c.endswith("+dirty") for c in commits)}
    return out


def _rounded(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _moved(ref: float | None, now: float | None, tol: dict) -> bool:
    if ref is None or now is None:
        return (ref is None) != (now is None)
    return abs(now - ref) > tol["absolute"] + tol["relative"] * abs(ref)


def _compare_parts(where: str, rp: dict, cp: dict, tol: dict) -> list[str]:
    lines = []
    for label in sorted(set(rp) | set(cp)):
        if label not in cp or label not in rp:
            lines.append(f"{where} [{label}]: " + ("vanished" if label not in cp else "new part"))
            continue
        if rp[label]["verdict"] != cp[label]["verdict"]:
            lines.append(f"{where} [{label}]: verdict {rp[label]['verdict']!r} -> {cp[label]['verdict']!r}")
        if rp[label].get("no_evidence", False) != cp[label].get("no_evidence", False):
            lines.append(f"{where} [{label}]: " + ("now carries no evidence" if cp[label].get("no_evidence")
                                                   else "now carries evidence"))
        if "stability" not in rp[label] and cp[label].get("stability") is not None:
            lines.append(f"{where} [{label}]: the reference holds no stability for it "
                         "(written before stability was judged): write the reference again")
        if _moved(rp[label]["mean"], cp[label]["mean"], tol):
            lines.append(f"{where} [{label}]: mean {rp[label]['mean']} -> {cp[label]['mean']} "
                         f"(tolerance {tol['absolute']:g} + {tol['relative']:g} x |reference|)")
        if "ci" in rp[label] and any(_moved(a, b, tol) for a, b in zip(rp[label]["ci"], cp[label]["ci"],
                                                                        strict=True)):
            lines.append(f"{where} [{label}]: interval {rp[label]['ci']} -> {cp[label]['ci']} "
                         f"(tolerance {tol['absolute']:g} + {tol['relative']:g} x |reference|)")
        for key in ("n_seeds", "n_agree"):
            if key in rp[label] and rp[label][key] != cp[label][key]:
                lines.append(f"{where} [{label}]: {key} {rp[label][key]} -> {cp[label][key]}")
    return lines


def _compare_claim(where: str, ref: dict, cur: dict, tol: dict) -> list[str]:
    lines = []
    if "definition" in cur and ref.get("definition") != cur["definition"]:
        lines.append(f"{where}: " + ("its statement, statistic, rule, falsifier setting or quote changed"
                                     if "definition" in ref else "the reference holds no definition for it")
                     + ": judge it again and write the reference again")
    if ref["verdict"] != cur["verdict"]:
        lines.append(f"{where}: verdict {ref['verdict']!r} -> {cur['verdict']!r}")
    if ref.get("seen_only", False) != cur.get("seen_only", False):
        lines.append(f"{where}: " + ("now judged on seen seeds only" if cur.get("seen_only")
                                     else "no longer judged on seen seeds only"))
    lines += _compare_parts(where, ref["parts"], cur["parts"], tol)
    rf, cf = ref.get("falsifier"), cur.get("falsifier")
    if rf is None and cf is not None:
        lines.append(f"{where}: has a falsifier the reference does not hold (written before it was "
                     "declared): write the reference again")
    elif rf is not None and cf is None:
        lines.append(f"{where}: its falsifier vanished")
    elif rf is not None:
        lines += _compare_claim(f"{where} falsifier", {**rf, "falsifier": None}, {**cf, "falsifier": None},
                                tol)
        lines += _compare_discrimination(f"{where} falsifier", rf.get("discrimination"),
                                         cf.get("discrimination"))
    return lines


def _compare_discrimination(where: str, ref: dict | None, cur: dict | None) -> list[str]:
    """Whether the falsifier tells the settings apart, and by what (claims.discrimination)."""
    if cur is None or ref == cur:
        return []
    if ref is None:
        return [f"{where}: the reference holds no discrimination for it (written before it was recorded): "
                "write the reference again"]
    return [f"{where}: {key} {ref.get(key)!r} -> {cur.get(key)!r}" for key in ("tells", "fooled")
            if ref.get(key) != cur.get(key)]


def machine() -> str:
    """This machine, as the reference names it: its CPU model and the kernel level its numbers were
    computed at (replikit.core.numerics.kernels), e.g. `Intel(R) Xeon(R) Processor, kernels AVX2`."""
    from replikit.core import numerics

    return f"{numerics.cpu()['model']}, kernels {numerics.kernels()}"


def compare(reference: dict, current: dict) -> list[str]:
    """One readable line per difference between two summaries; [] when they agree."""
    tol = reference.get("tolerance", TOLERANCE)
    lines = []
    ref_papers, cur_papers = reference["papers"], current["papers"]
    for paper in sorted(set(ref_papers) | set(cur_papers)):
        if paper not in cur_papers:
            lines.append(f"{paper}: in the reference, missing from this run")
            continue
        if paper not in ref_papers:
            lines.append(f"{paper}: new in this run, not in the reference")
            continue
        ref, cur = ref_papers[paper], cur_papers[paper]
        for cid in sorted(set(ref) | set(cur)):
            if cid not in cur or cid not in ref:
                lines.append(f"{paper} {cid}: " + ("vanished" if cid not in cur else "new claim"))
                continue
            lines += _compare_claim(f"{paper} {cid}", ref[cid], cur[cid], tol)
    return lines


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m replikit.scoring.scorecard_reference",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("check", "write"),
                        help="check: print the differences from the reference (exit 1 if any); write: "
                             "replace the reference (commit it with a message that says why)")
    parser.add_argument("claims", nargs="+", help="the smoke run's results/<paper>/claims.json files")
    parser.add_argument("--reference", default=str(REFERENCE), help=f"default: {REFERENCE}")
    args = parser.parse_args(argv)
    current = summarize([read_json(p) for p in args.claims])
    if args.action == "write":
        write_json(args.reference, {**current, "machine": machine()})
        print(f"wrote {args.reference}: commit it with a message that says why the verdicts changed")
        return 0
    reference = read_json(args.reference)
    diff = compare(reference, current)
    print("\n".join(diff) if diff else "no difference from the reference")
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())
