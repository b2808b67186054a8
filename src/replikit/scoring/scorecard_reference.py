"""The committed smoke scorecard: a guard against verdicts that drift silently between commits.

`tests/reference/smoke_scorecard.json` holds every smoke claim's verdict and each part's verdict,
mean and stability (replikit.scoring.stability; shown, not guarded beyond its presence) and whether
it carries no evidence, and the same for the claim's falsifier. CI's smoke run compares its
scorecards with it (tests/test_workflow.py) and fails on any changed verdict or evidence, on a claim
or part that appeared or vanished, and on a mean that moved by more than TOLERANCE, printing one
line per difference. The smoke DAG is deterministic on one CPU type; the tolerance absorbs small
floating-point differences between machines, and a real change of the numbers is far larger.

A few smoke rows sit so near their margin that another CPU type (its own BLAS kernels) gives another
verdict, and CI has run on more than one. Such a machine's rows are kept beside the reference, under
`machine_variants` (the machine named by its CPU and torch's CPU capability, the rows that differ
and the commit that judged them): a run passes when every claim matches the reference's row or, for
the claims one variant holds, that one machine's row, never two machines' rows mixed. A variant is
a recorded result of a real run, not a widened tolerance, and the published smoke scorecard names
each row that reads differently on another machine.

Updating the reference is a deliberate commit whose message says why:

    python -m replikit.scoring.scorecard_reference write results/*/claims.json
    python -m replikit.scoring.scorecard_reference write --machine results/*/claims.json  # this CPU's rows
    python -m replikit.scoring.scorecard_reference check results/*/claims.json   # the diff, without writing

Both writes name the machine they run on, so run them where the smoke DAG ran.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections.abc import Iterator
from pathlib import Path

from replikit.core.io import read_json, write_json

REFERENCE = Path(__file__).resolve().parents[3] / "tests" / "reference" / "smoke_scorecard.json"
# A mean may move by at most ABSOLUTE + RELATIVE * |reference| (floating-point noise between CPUs).
TOLERANCE = {"absolute": 0.02, "relative": 0.05}


def _parts(parts: list[dict]) -> dict:
    """Per part its verdict, mean and stability, and `no_evidence` where it carries none (a falsifier
    made only of such parts is not measured: replikit.scoring.claims.falsifier_measured)."""
    return {p["label"]: {"verdict": p["verdict"], "mean": p["mean"],
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
    out = {"verdict": row["verdict"], "parts": _parts(row["parts"]),
           "definition": definition(row.get("statement", ""), row.get("statistic", ""), row.get("rule", ""),
                                    (row.get("falsifier") or {}).get("setting", ""),
                                    (row.get("source") or {}).get("quote", ""))}
    falsifier = row.get("falsifier")
    if falsifier:
        out["falsifier"] = {"verdict": falsifier["verdict"], "parts": _parts(falsifier["parts"])}
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
    return lines


def machine() -> str:
    """This machine, as a variant is named: its CPU model and torch's CPU capability (which picks the
    BLAS kernels), e.g. `AMD EPYC, AVX512`."""
    import torch

    model = next((line.split(":", 1)[1].strip() for line in _cpuinfo() if line.startswith("model name")),
                 "unknown CPU")
    return f"{model}, {torch.backends.cpu.get_cpu_capability()}"


def _cpuinfo() -> Iterator[str]:
    try:
        yield from Path("/proc/cpuinfo").read_text().splitlines()
    except OSError:
        return


def compare(reference: dict, current: dict) -> list[str]:
    """One readable line per difference between two summaries; [] when they agree. Where the
    reference records machine variants (`machine_variants`), a run agrees when every claim matches
    the reference's row or, for the claims one variant holds, that one machine's row: a run never
    mixes two machines' rows."""
    plain = _compare(reference, current)
    for name in reference.get("machine_variants") or {}:
        if not _compare(reference, current, name):
            return []
    return plain


def accepted_variant(reference: dict, current: dict) -> str | None:
    """The machine variant whose rows the run matches where it differs from the reference's own
    (None: it matches the reference's rows, or no variant)."""
    if not _compare(reference, current):
        return None
    return next((name for name in reference.get("machine_variants") or {}
                 if not _compare(reference, current, name)), None)


def _compare(reference: dict, current: dict, variant: str | None = None) -> list[str]:
    """`compare` against the reference's rows, or, for the claims that `variant` holds, its rows."""
    tol = reference.get("tolerance", TOLERANCE)
    held = (reference.get("machine_variants") or {}).get(variant, {}).get("papers", {}) if variant else {}
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
            row = held.get(paper, {}).get(cid, ref[cid])
            lines += _compare_claim(f"{paper} {cid}", row, cur[cid], tol)
    return lines


def with_machine_variant(reference: dict, current: dict, name: str) -> dict:
    """`reference` with this machine's variant (`name`) replaced by the claims of `current` that differ
    from the reference's own rows; the reference's rows are unchanged. A claim the reference does not
    hold cannot be a variant: write the reference itself."""
    tol = reference.get("tolerance", TOLERANCE)
    if name == reference.get("machine"):
        raise SystemExit(f"the reference's own rows were recorded on {name}: a difference on that machine "
                         "is a change, not a variant; fix: write the reference itself, saying why")
    if (current.get("claims_by") or {}).get("dirty"):
        raise SystemExit("these claims were judged by uncommitted code; fix: commit, judge them again, "
                         "then record the variant")
    new = [f"{p} {c}" for p, claims in current["papers"].items() for c in claims
           if c not in reference["papers"].get(p, {})]
    if new:
        raise SystemExit(f"not in the reference: {', '.join(new)}; fix: write the reference itself "
                         "(without --machine) from a run on the reference's machine")
    papers: dict[str, dict] = {}
    for paper, claims in current["papers"].items():
        for cid, row in claims.items():
            if _compare_claim("", reference["papers"][paper][cid], row, tol):
                papers.setdefault(paper, {})[cid] = row
    variants = {k: v for k, v in (reference.get("machine_variants") or {}).items() if k != name}
    if papers:
        variants[name] = {"claims_by": current.get("claims_by"), "papers": papers}
    return {**reference, "machine_variants": dict(sorted(variants.items()))}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m replikit.scoring.scorecard_reference",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("action", choices=("check", "write"),
                        help="check: print the differences from the reference (exit 1 if any); write: "
                             "replace the reference (commit it with a message that says why)")
    parser.add_argument("claims", nargs="+", help="the smoke run's results/<paper>/claims.json files")
    parser.add_argument("--reference", default=str(REFERENCE), help=f"default: {REFERENCE}")
    parser.add_argument("--machine", action="store_true",
                        help="with write: keep the reference's rows and record, as this machine's variant "
                             "(its CPU and torch's CPU capability), the claims whose rows differ here")
    args = parser.parse_args(argv)
    current = summarize([read_json(p) for p in args.claims])
    if args.action == "write" and args.machine:
        name = machine()
        write_json(args.reference, with_machine_variant(read_json(args.reference), current, name))
        print(f"wrote {args.reference} with the variant of {name}: commit it with a message that says why")
        return 0
    if args.action == "write":
        old = read_json(args.reference) if Path(args.reference).exists() else {}
        write_json(args.reference, {**current, "machine": machine()})
        print(f"wrote {args.reference}: commit it with a message that says why the verdicts changed")
        if old.get("machine_variants"):  # recorded against the rows just replaced
            print("dropped the variants of " + "; ".join(old["machine_variants"]) + ": record each again "
                  "with `write --machine` on its machine")
        return 0
    reference = read_json(args.reference)
    diff = compare(reference, current)
    variant = accepted_variant(reference, current)
    print("\n".join(diff) if diff else "no difference from the reference" + (
        f" (where it differs from the reference's rows, it matches those of {variant})" if variant else ""))
    return 1 if diff else 0


if __name__ == "__main__":
    sys.exit(main())
