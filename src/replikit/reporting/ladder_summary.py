"""What a paper's scale ladder shows (`python -m replikit.plan.ladder summary <paper>`): every claim part's
statistic, interval and verdict per rung, read from each rung's scorecard.

Writes, under results/ladder/<paper>/:
- `ladder.json`: the rows (claim, part, rung, knob, mean, interval, verdict, why no evidence, a
  caveat beside the verdict, and the claim's own verdict) and, per part, one sentence: "holds at
  every rung (<verdict>)", "first replicated at rung k (knob)", "changes sign at rung k (knob)", or
  else the verdicts in order, followed by each rung's caveat. A
  claim of several parts (e.g. the two bounds of an equivalence) gets a sentence of its own, from the
  claim's verdict, and its parts' sentences say "this part alone": one bound passing is not the claim
  replicated;
- `ladder.csv`: claim part x rung -> verdict;
- `ladder.md`: the report's "Ladder" section (also read by rule report);
- `ladder.png`: per claim part, the statistic and its interval per rung, coloured by verdict, with the
  threshold and, where the paper states one, the paper's value.
Rungs that have not run (no scorecard yet) are listed as such; predicted and measured hours per rung
come from `plan.json` (`replikit.plan.ladder plan`) and each rung's `wall.json`.
"""

from __future__ import annotations

import csv
import hashlib
import json
import math
import textwrap
from pathlib import Path
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # for type hints only: replikit.plan.ladder imports this module to summarize
    from replikit.plan.ladder import Ladder, Rung

VERDICTS = ("replicated", "not replicated", "inconclusive")


def _num(x: float | None) -> float | None:
    return None if x is None or (isinstance(x, float) and math.isnan(x)) else float(x)


def scorecard(ladder: Ladder, rung: Rung) -> dict | None:
    path = ladder.outdir(rung) / "results" / ladder.paper / "claims.json"
    return json.loads(path.read_text()) if path.is_file() else None


def collect(ladder: Ladder) -> tuple[list[dict], list[Rung]]:
    """One row per (claim part, rung that ran), and the rungs with no scorecard yet."""
    rows, missing = [], []
    for rung in ladder.rungs:
        card = scorecard(ladder, rung)
        if card is None:
            missing.append(rung)
            continue
        for claim in card["claims"]:
            parts = claim["parts"] or [None]
            for index, part in enumerate(parts):
                base = {
                    "claim": claim["id"],
                    "kind": claim["kind"],
                    "rung": rung.index,
                    "rung_name": rung.name,
                    "knob": rung.knob,
                    "n_seeds": claim.get("n_seeds"),
                    "claim_verdict": claim.get("verdict", "not measured"),
                    "n_parts": len(parts),
                }
                if part is None:  # not measurable at this rung (e.g. its task does not run)
                    rows.append(
                        {
                            **base,
                            "part": 0,
                            "label": "",
                            "verdict": "not measured",
                            "why": claim.get("note", ""),
                        }
                    )
                    continue
                rows.append(
                    {
                        **base,
                        "part": index,
                        "label": part["label"],
                        "mean": _num(part["mean"]),
                        "ci_low": _num(part["ci_low"]),
                        "ci_high": _num(part["ci_high"]),
                        "threshold": part["threshold"],
                        "direction": part["direction"],
                        "paper_value": _num(part.get("paper_value")),
                        "verdict": part["verdict"],
                        "why": part.get("no_evidence", "").removeprefix(part["label"] + ": "),
                        "caveat": part.get("caveat", "").removeprefix(part["label"] + ": "),
                    }
                )
    return rows, missing


def _side(row: dict) -> int:
    """+1 when the interval lies wholly on the claimed side of the threshold, -1 wholly on the other,
    0 when it straddles it (or there is none)."""
    lo, hi, t = row.get("ci_low"), row.get("ci_high"), row.get("threshold")
    if lo is None or hi is None or t is None:
        return 0
    sign = 1 if row["direction"] == "above" else -1
    if lo > t:
        return sign
    if hi < t:
        return -sign
    return 0


def sentence(seq: list[dict], rungs: dict[int, Rung]) -> str:
    """What one claim part does along the ladder (`seq`: its rows in rung order), with the caveat of
    each rung that has one (e.g. the method did not learn in some seeds there)."""
    caveats = [f"rung {r['rung']}: {r['caveat']}" for r in seq if r.get("caveat")]
    return _trend(seq, rungs) + "".join(f"; {c}" for c in caveats)


def _trend(seq: list[dict], rungs: dict[int, Rung]) -> str:
    measured = [r for r in seq if r["verdict"] != "not measured"]
    if not measured:
        return "not measured at any rung that ran"
    verdicts = [r["verdict"] for r in measured]
    if len(measured) == 1:  # one rung says nothing about the ladder
        only = measured[0]
        return f"only rung {only['rung']} measured so far: {only['verdict']}"
    if len(set(verdicts)) == 1:
        why = {r["why"] for r in measured if r["why"]}
        return f"holds at every rung: {verdicts[0]}" + (f" ({'; '.join(sorted(why))})" if why else "")
    for prev, row in zip(measured, measured[1:], strict=False):
        if _side(prev) * _side(row) < 0:
            return f"changes sign at rung {row['rung']} ({rungs[row['rung']].knob})"
    first = next((r for r in measured if r["verdict"] == "replicated"), None)
    if first is not None and first is not measured[0]:
        return f"first replicated at rung {first['rung']} ({rungs[first['rung']].knob})"
    return "verdicts along the ladder: " + ", ".join(f"rung {r['rung']} {r['verdict']}" for r in measured)


PART_ALONE = "this part alone: "


def claim_sentences(rows: list[dict], rungs: dict[int, Rung]) -> dict[str, str]:
    """One sentence per claim of several parts, from the claim's own verdict per rung (every part must
    pass for the claim to be replicated)."""
    out = {}
    for claim in dict.fromkeys(r["claim"] for r in rows if r["n_parts"] > 1):
        per_rung = {r["rung"]: r for r in rows if r["claim"] == claim}
        seq = [{"rung": i, "verdict": r["claim_verdict"], "why": ""} for i, r in sorted(per_rung.items())]
        out[claim] = sentence(seq, rungs)
    return out


def _parts(rows: list[dict]) -> list[tuple[str, int]]:
    """(claim, part index) in the order first met: a part is the same statistic at every rung, though
    its label may name a rung's settings (e.g. its tau)."""
    keys: list[tuple[str, int]] = []
    for r in rows:
        key = (r["claim"], r["part"])
        if key not in keys:
            keys.append(key)
    return keys


def _label(rows: list[dict], key: tuple[str, int]) -> str:
    labels = list(dict.fromkeys(r["label"] for r in rows if (r["claim"], r["part"]) == key and r["label"]))
    return " / ".join(labels)


def _fmt(x: float | None) -> str:
    return "—" if x is None else f"{x:.3f}"


def _hours(ladder: Ladder) -> dict[int, dict]:
    """Per rung: predicted CPU hours (plan.json) and measured wall seconds (wall.json). A plan row is
    matched to its rung by name (by index only in a row without one), so a rung inserted after the
    plan was written shows no prediction rather than its neighbour's."""
    out: dict[int, dict] = {r.index: {} for r in ladder.rungs}
    index = {r.name: r.index for r in ladder.rungs}
    plan = ladder.outdir(ladder.rungs[0]).parent / "plan.json"
    if plan.is_file():
        for row in json.loads(plan.read_text()):
            at = index.get(row["name"]) if "name" in row else row["rung"]
            if at in out:
                out[at].update(predicted_cpu_h=row["cpu_hours"], predicted_h100_h=row["gpu_hours"]["H100"])
    seen: set[str] = set()  # a run copied from the run store counts at the rung that trained it
    for rung in ladder.rungs:
        wall = ladder.outdir(rung) / "wall.json"
        if wall.is_file():
            w = json.loads(wall.read_text())
            out[rung.index].update(wall_s=w["wall_s"], cores=w["cores"], rc=w["rc"], calls=w.get("calls", 1))
        job_s = 0.0
        for path in sorted((ladder.outdir(rung) / "results" / ladder.paper).rglob("metrics.json")):
            blob = path.read_bytes()
            digest = hashlib.sha256(blob).hexdigest()
            elapsed = json.loads(blob).get("elapsed_s")
            if elapsed is not None and digest not in seen:
                seen.add(digest)
                job_s += float(elapsed)
        if job_s:
            out[rung.index]["measured_job_h"] = job_s / 3600
    return out


def table(record: dict) -> dict:
    """The claim part x rung table of a summary record (ladder.json): the rungs that ran, and per
    part its cells ("verdict: mean [low, high]" or "not measured") and its sentence."""
    rows = record["rows"]
    ran = sorted({r["rung"] for r in rows})
    said = {(x["claim"], x["part"]): x["sentence"] for x in record["sentences"]}
    said_claim = {x["claim"]: x["sentence"] for x in record.get("claim_sentences", [])}
    out = []
    for claim, part in _parts(rows):
        if part == 0 and claim in said_claim:  # a claim of several parts: its own verdict first
            own = {r["rung"]: r["claim_verdict"] for r in rows if r["claim"] == claim}
            out.append(
                {
                    "claim": claim,
                    "part": "the claim (every part must pass)",
                    "cells": [
                        {"verdict": own.get(i, "not measured"), "text": own.get(i, "not measured")}
                        for i in ran
                    ],
                    "sentence": said_claim[claim],
                    "focus": claim in record["claims"],
                }
            )
        cells = []
        for i in ran:
            row = next((r for r in rows if (r["claim"], r["part"], r["rung"]) == (claim, part, i)), None)
            if row is None or row["verdict"] == "not measured":
                cells.append({"verdict": "not measured", "text": "not measured"})
            else:
                cells.append(
                    {
                        "verdict": row["verdict"],
                        "text": f"{row['verdict']}: {_fmt(row['mean'])} "
                        f"[{_fmt(row['ci_low'])}, {_fmt(row['ci_high'])}]"
                        + (" (no evidence)" if row["why"]
                           else f" ({row['caveat']})" if row.get("caveat") else ""),
                    }
                )
        out.append(
            {
                "claim": claim,
                "part": _label(rows, (claim, part)) or "—",
                "cells": cells,
                "sentence": said[(claim, part)],
                "focus": claim in record["claims"],
            }
        )
    names = {r["index"]: r["name"] for r in record["rungs"]}
    return {"ran": [{"index": i, "name": names[i]} for i in ran], "parts": out}


def _cell(text: str) -> str:
    return text.replace("|", "&#124;")


def rung_rows(record: dict) -> list[dict]:
    """The rungs of a summary record with their predicted CPU hours and measured wall time as text."""
    out = []
    for r in record["rungs"]:
        h = record["hours"].get(str(r["index"]), record["hours"].get(r["index"], {}))
        pred = f"{h['predicted_cpu_h']:.2f}" if "predicted_cpu_h" in h else "—"
        took = f"{h['measured_job_h']:.2f}" if "measured_job_h" in h else "—"
        if "measured_job_h" in h and not r["ran"]:  # jobs of a rung that was stopped or failed part-way
            took += " (partial: the rung did not finish)"
        calls = f", {h['calls']} calls" if h.get("calls", 1) > 1 else ""
        ran = "wall_s" in h and r["ran"]
        wall = f"{h['wall_s'] / 60:.0f} min ({h['cores']} cores{calls})" if ran else "not run"
        out.append({**r, "predicted": pred, "took": took, "wall": wall, "seed_list": seed_list(r["seeds"])})
    return out


def _ladder_flag(record: dict) -> str:
    """The command line's `--ladder NAME` for a paper's other ladder ("" for its main one)."""
    key = record.get("key", "ladder")
    return f" --ladder {key.removeprefix('ladder_')}" if key != "ladder" else ""


def seed_list(seeds: list[int]) -> str:
    """Which seeds a rung ran, runs of consecutive seeds joined: [0, 1, 2, 3, 4] -> "0-4", [0, 2] -> "0, 2"
    (a rung on fresh seeds shows it)."""
    spans: list[list[int]] = []
    for s in sorted(seeds):
        if spans and s == spans[-1][1] + 1:
            spans[-1][1] = s
        else:
            spans.append([s, s])
    return ", ".join(f"{a}-{b}" if b > a + 1 else (f"{a}, {b}" if b > a else f"{a}") for a, b in spans)


def markdown(record: dict) -> str:
    """The "Ladder" section of one paper (ladder.md; the report renders the same record)."""
    t = table(record)
    lines = [
        f"### Ladder: {record.get('ladder', record['paper'])}",
        "",
        f"From the `{record['base']}` block (rung 0) toward the paper's settings, one knob per rung, each on "
        f"top of the previous one (`config/papers/{record['paper']}.yaml`, "
        f"`{record.get('key', 'ladder')}:`). The "
        f"{record['base']}-scale verdicts stay what they are; the ladder is evidence beside them.",
        "",
        "| rung | knob | why | budget cuts | seeds | predicted CPU-h | training job-h it took | wall |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for r in rung_rows(record):
        why = r["reason"] + (f" **Changed:** {r['changed']}" if r["changed"] else "")
        lines.append(
            f"| {r['index']} {r['name']} | {r['knob']} | {_cell(why)} | {_cell(r['budget_reason'] or '—')} | "
            f"{r['seed_list']} | {r['predicted']} | {r['took']} | {r['wall']} |"
        )
    if not t["ran"]:
        lines += ["", "No rung has run yet, so there is no claim x rung table."]
    else:
        lines += [
            "",
            "| claim | part | "
            + " | ".join(f"rung {x['index']} {x['name']}" for x in t["ran"])
            + " | along the ladder |",
            "|---|---|" + "---|" * len(t["ran"]) + "---|",
        ]
    for p in t["parts"]:
        lines.append(
            f"| {p['claim']} | {_cell(p['part'])} | "
            + " | ".join(_cell(c["text"]) for c in p["cells"])
            + f" | {_cell(p['sentence'])} |"
        )
    missing = [r for r in record["rungs"] if not r["ran"]]
    if missing:
        lines += [
            "",
            "Not run yet: "
            + ", ".join(f"rung {r['index']} {r['name']}" for r in missing)
            + f" (`python -m replikit.plan.ladder run {record['paper']}{_ladder_flag(record)} --rung NAME`).",
        ]
    return "\n".join(lines) + "\n"


def _same_statistic(seqs: list[list[dict]]) -> bool:
    """Whether parts measure one statistic (the bounds of an equivalence): the same mean and interval
    at every rung."""
    first = [(r["rung"], r["mean"], r["ci_low"], r["ci_high"]) for r in seqs[0]]
    return all([(r["rung"], r["mean"], r["ci_low"], r["ci_high"]) for r in q] == first for q in seqs[1:])


def panels(rows: list[dict], claims: list[str]) -> list[dict]:
    """The figure's panels (the ladder's claims first): one per claim part, coloured by the part's
    verdict, except that the parts of one statistic (an equivalence's two bounds) share one panel with
    every threshold, coloured by the claim's own verdict, so that one bound passing is never drawn as
    the claim replicated."""
    keys = [
        k
        for k in _parts(rows)
        if any(r["verdict"] != "not measured" for r in rows if (r["claim"], r["part"]) == k)
    ]
    keys.sort(key=lambda k: (k[0] not in claims, k[0]))
    out: list[dict] = []
    for claim in dict.fromkeys(k[0] for k in keys):
        own = [k for k in keys if k[0] == claim]
        seqs = [
            [r for r in rows if (r["claim"], r["part"]) == k and r["verdict"] != "not measured"] for k in own
        ]
        if len(own) > 1 and _same_statistic(seqs):
            seq = [{**r, "verdict": r["claim_verdict"]} for r in seqs[0]]
            labels = " and ".join(_label(rows, k) for k in own)
            out.append(
                {
                    "title": f"{claim}, the claim (every part must pass): {labels}",
                    "seq": seq,
                    "thresholds": [q[0]["threshold"] for q in seqs],
                }
            )
            continue
        for k, seq in zip(own, seqs, strict=True):
            out.append(
                {"title": f"{claim}: {_label(rows, k)}", "seq": seq, "thresholds": [seq[0]["threshold"]]}
            )
    return out


def tick_labels(names: list[str]) -> list[str]:
    """Each rung's index over its name; past 5 rungs every other name a line lower, so that
    neighbours' names never overlap (the 8-rung maze ladder's did)."""
    stagger = len(names) > 5
    return [f"{i}\n" + ("\n" if stagger and i % 2 else "") + n for i, n in enumerate(names)]


def figure(ladder: Ladder, rows: list[dict], out: Path) -> None:
    """Per claim part (the ladder's claims first), mean and interval per rung, coloured by verdict;
    an equivalence's bounds share a panel coloured by the claim's verdict (`panels`)."""
    from replikit.reporting.plotting import VERDICT_COLOURS, pyplot, set_style

    shown = panels(rows, ladder.claims)
    set_style()
    plt = pyplot()
    ncols = 3
    nrows = max(1, math.ceil(len(shown) / ncols))
    fig, axes = plt.subplots(nrows, ncols, figsize=(4.6 * ncols, 2.9 * nrows), squeeze=False)
    names = {r.index: r.name for r in ladder.rungs}
    drawn_verdicts, drew_paper = set(), False
    for ax, panel in zip(axes.flat, shown, strict=False):
        seq = panel["seq"]
        for r in seq:
            colour = VERDICT_COLOURS[r["verdict"]]
            drawn_verdicts.add(r["verdict"])
            if r["ci_low"] is not None:
                ax.plot([r["rung"], r["rung"]], [r["ci_low"], r["ci_high"]], c=colour, lw=3)
            if r["mean"] is not None:
                ax.scatter([r["rung"]], [r["mean"]], c=colour, marker="D", s=36, zorder=3)
            if r["why"] or r.get("caveat"):
                ax.annotate(
                    "no evidence" if r["why"] else textwrap.fill(r["caveat"].split(",")[0], 26),
                    (r["rung"], r["mean"] or 0),
                    fontsize=6,
                    color=colour,
                    xytext=(3, 6),
                    textcoords="offset points",
                )
        for threshold in panel["thresholds"]:
            ax.axhline(threshold, ls="--", c="black", lw=0.8)
        paper = [r["paper_value"] for r in seq if r["paper_value"] is not None]
        if paper:
            ax.axhline(paper[0], ls=":", c="#555555", lw=1.2)
            drew_paper = True
        ticks = [r.index for r in ladder.rungs]
        ax.set_xticks(ticks, tick_labels([names[i] for i in ticks]), fontsize=6.5)
        ax.set_xlim(-0.5, max(ticks) + 0.5)
        values = [v for r in seq for v in (r["mean"], r["ci_low"], r["ci_high"]) if v is not None]
        values += paper + panel["thresholds"]
        lo, hi = min(values), max(values)
        pad = 0.1 * (hi - lo) or 0.05
        ax.set_ylim(lo - pad, hi + pad)
        label = textwrap.fill(panel["title"], 62)
        ax.set_title(label, fontsize=7.5, loc="left", fontweight="normal")
        ax.tick_params(axis="y", labelsize=7)
    for ax in list(axes.flat)[len(shown) :]:
        ax.set_axis_off()
    from matplotlib.lines import Line2D

    handles = [
        Line2D([], [], c=VERDICT_COLOURS[v], marker="D", lw=3, label=v)
        for v in VERDICTS
        if v in drawn_verdicts
    ]
    handles.append(Line2D([], [], c="black", ls="--", lw=0.8, label="threshold(s) the claim must pass"))
    if drew_paper:
        handles.append(Line2D([], [], c="#555555", ls=":", lw=1.2, label="the paper's value"))
    fig.legend(
        handles=handles, loc="lower center", ncol=len(handles), fontsize=7, bbox_to_anchor=(0.5, -0.02)
    )
    fig.tight_layout(rect=(0, 0.04, 1, 1))
    fig.suptitle(
        f"{ladder.ident}: scale ladder (diamond and bar: mean and 90 % t-interval over seeds; "
        "rung 0 = the " + ladder.base + " block)",
        fontsize=9,
        y=1.0,
        va="bottom",
    )
    out.parent.mkdir(parents=True, exist_ok=True)
    tmp = out.with_name(f".{out.stem}.tmp{out.suffix}")
    fig.savefig(tmp)
    plt.close(fig)
    tmp.replace(out)


def summarize(ladder: Ladder) -> dict:
    rows, missing = collect(ladder)
    rungs = {r.index: r for r in ladder.rungs}
    said_claim = claim_sentences(rows, rungs)  # the claims of several parts
    sentences = {
        k: (PART_ALONE if k[0] in said_claim else "")
        + sentence([r for r in rows if (r["claim"], r["part"]) == k], rungs)
        for k in _parts(rows)
    }
    where = ladder.outdir(ladder.rungs[0]).parent
    where.mkdir(parents=True, exist_ok=True)
    record = {
        "paper": ladder.paper,
        "ladder": ladder.ident,
        "key": ladder.key,
        "base": ladder.base,
        "claims": ladder.claims,
        "rungs": [
            {
                "index": r.index,
                "name": r.name,
                "knob": r.knob,
                "reason": r.reason,
                "budget_reason": r.budget_reason,
                "seeds": r.seeds,
                "changed": r.changed,
                "keys": r.own,
                "ran": r not in missing,
            }
            for r in ladder.rungs
        ],
        "hours": _hours(ladder),
        "rows": rows,
        "sentences": [{"claim": c, "part": p, "sentence": s} for (c, p), s in sentences.items()],
        "claim_sentences": [{"claim": c, "sentence": s} for c, s in said_claim.items()],
    }
    (where / "ladder.json").write_text(json.dumps(record, indent=1))
    t = table(json.loads(json.dumps(record)))
    with open(where / "ladder.csv", "w", newline="") as f:
        w = csv.writer(f)
        w.writerow(["claim", "part", *[f"rung {x['index']} {x['name']}" for x in t["ran"]]])
        for p in t["parts"]:
            w.writerow([p["claim"], p["part"], *[c["verdict"] for c in p["cells"]]])
    (where / "ladder.md").write_text(markdown(json.loads(json.dumps(record))))
    if rows:
        figure(ladder, rows, where / "ladder.png")
    print((where / "ladder.md").read_text())
    return record
