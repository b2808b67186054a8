"""Rows judged on two seed sets (config keys <paper>.fresh_seeds and <paper>.earlier_seeds, issue 64).

A row whose margin, statistic or settings were fixed after its seeds had been seen is judged again on
seeds never seen before. Its headline (verdict, parts, falsifier, standing, seeds: what every count
reads) is the fresh set's, and `seed_sets` keeps both judgements, the seen set's first, each naming
its seeds and its role. Every row names the seeds it was judged on (`seeds`).

Kept apart from `claims` on purpose: `claims` is part of the code that every training run's code hash
covers (replikit.reporting.provenance.code_hash), and which seeds judge a row changes no run.
"""

from __future__ import annotations

from replikit.scoring.claims import MissingResult

SEEN_ROLE = "seen before the row's margin, statistic or settings were fixed"
FRESH_ROLE = "fresh: never seen before they were fixed; the headline, which the counts use"
# config key <paper>.earlier_seeds: the paper's seeds changed, its settings did not
EARLIER_ROLE = "earlier: the seeds before the paper's seeds changed, same settings; shown, not counted"
CURRENT_ROLE = "the paper's seeds now: the headline, which the counts use"
# what a table calls each set, in a few words
SHORT = {SEEN_ROLE: "seen seeds", FRESH_ROLE: "fresh seeds", EARLIER_ROLE: "earlier seeds",
         CURRENT_ROLE: "seeds"}
# A row's headline: what the fresh set's judgement replaces (the declaration's fields stay).
HEADLINE = ("verdict", "magnitude", "fidelity", "deviations", "unverified", "measurable", "n_seeds", "note",
            "stability", "fragile", "parts", "falsifier", "standing", "seeds")


def named(rows: list[dict], seeds: list[int]) -> list[dict]:
    """`rows` (judged on `seeds`), each naming them as `seeds`."""
    for row in rows:
        row["seeds"] = sorted(int(s) for s in seeds)
    return rows


def seed_set(row: dict, role: str, headline: bool) -> dict:
    """One seed set's judgement of a row: its seeds, its role (SEEN_ROLE, FRESH_ROLE) and its result."""
    return {"role": role, "headline": headline, **{k: row.get(k) for k in HEADLINE}}


def _by_id(rows: list[dict], other_rows: list[dict], unknown_is: str) -> dict[str, dict]:
    """`other_rows` (the same claims judged on another seed set) by claim id; MissingResult
    (`unknown_is`: what the message calls it) for one that `rows` lacks."""
    by_id = {r["id"]: r for r in other_rows}
    unknown = sorted(set(by_id) - {r["id"] for r in rows})
    if unknown:
        raise MissingResult(f"{unknown_is}: {', '.join(unknown)}")
    return by_id


def with_seed_sets(rows: list[dict], fresh_rows: list[dict], seen: list[int], fresh: list[int]) -> list[dict]:
    """`rows` (judged on the `seen` seeds) with each claim of `fresh_rows` (the same claims judged on
    the `fresh` seeds) taking its headline from the fresh seeds: verdict, parts, falsifier, standing
    and seeds are the fresh set's, so every count reads them; `seed_sets` keeps both judgements, the
    seen set's first, each naming its seeds."""
    by_id = _by_id(rows, fresh_rows, "judged on fresh seeds but not on the seen ones")
    out = []
    for row in rows:
        new = by_id.get(row["id"])
        if new is None:
            out.append({**row, "seeds": row.get("seeds") or sorted(int(s) for s in seen)})
            continue
        old = {**row, "seeds": sorted(int(s) for s in seen)}
        new = {**new, "seeds": sorted(int(s) for s in fresh)}
        out.append({**row, **{k: new.get(k) for k in HEADLINE},
                    "seed_sets": [seed_set(old, SEEN_ROLE, False), seed_set(new, FRESH_ROLE, True)]})
    return out


def with_earlier_seeds(rows: list[dict], earlier_rows: list[dict], seeds: list[int],
                       earlier: list[int]) -> list[dict]:
    """`rows` (judged on the paper's `seeds`) with each claim of `earlier_rows` (the same claims judged
    on the `earlier` seeds, before the paper's seeds changed) shown beside it: the headline stays the
    paper's seeds', and `seed_sets` keeps both judgements, the earlier set's first."""
    by_id = _by_id(rows, earlier_rows, "judged on earlier seeds but not on the paper's")
    out = []
    for row in rows:
        old = by_id.get(row["id"])
        now = {**row, "seeds": row.get("seeds") or sorted(int(s) for s in seeds)}
        if old is not None:
            old = {**old, "seeds": sorted(int(s) for s in earlier)}
            now["seed_sets"] = [seed_set(old, EARLIER_ROLE, False), seed_set(now, CURRENT_ROLE, True)]
        out.append(now)
    return out


SEEN_ONLY = "seen seeds only"  # the standing of a replication judged only on seen seeds


def seen_only(rows: list[dict], ids: list[str]) -> list[dict]:
    """`rows` with each listed claim measured here (config key <paper>.seen_seeds: its margin,
    statistic or settings were fixed after this scale's seeds had been seen, and the scale runs no
    fresh seeds for it) marked `seen_only`; a replication among them stands as SEEN_ONLY, counted
    apart, since it has no verdict from seeds never seen. Other standings (cannot discriminate,
    falsifier not measured, falsifier fixed by its pilot) are kept, and a row not measured here has
    no verdict to mark."""
    unknown = sorted(set(ids) - {r["id"] for r in rows})
    if unknown:
        raise MissingResult(f"listed as judged on seen seeds only, but not judged: {', '.join(unknown)}")
    out = []
    for row in rows:
        if row["id"] in ids and row.get("parts"):
            row = {**row, "seen_only": True}
            if row.get("standing") == "replication":
                row["standing"] = SEEN_ONLY
        out.append(row)
    return out


def short_name(seed_set: dict) -> str:
    """What a table calls a seed set: "fresh seeds", "seen seeds", "earlier seeds" or "seeds"."""
    return SHORT.get(seed_set.get("role", ""), "seeds")


def printed(rows: list[dict]) -> list[str]:
    """One line per row judged on two seed sets, for the claims job's log: each set's verdict, seeds and
    parts' means (the scorecard's own print shows the headline)."""
    return [f"{r['id']} seeds {s['seeds']} ({s['role']}): {s['verdict']} "
            + str([(p["label"], p["mean"] if p["mean"] is None else round(p["mean"], 4)) for p in s["parts"]])
            for r in rows for s in r.get("seed_sets") or []]
