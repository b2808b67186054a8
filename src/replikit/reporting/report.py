"""Render the scorecard and figures into one self-contained HTML page and a Markdown twin.

The page's title says what it is (how many papers, the scale, the date and the commit of the
scorecards); its first screen carries the verdict counts per scale and per paper. The scorecard table
follows, grouped by fidelity (claims tested under the paper's own settings first, proxies with their
deviations after), then one forest plot per paper ("claim parts at a glance"), then every figure
with its caption and provenance (in the HTML, a click on a figure shows it at full size).
"""

from __future__ import annotations

import base64
import datetime as dt
import json
import re
from collections import Counter
from pathlib import Path

import jinja2
import markupsafe

from replikit.core.config import ON_DATASET
from replikit.core.io import read_json, write_text
from replikit.core.text import human
from replikit.data.datasets import subset_title
from replikit.reporting.ladder_summary import seed_list
from replikit.reporting.provenance import git_commit, other_kernels, stale, uncommitted
from replikit.scoring.claims import FIDELITIES, SCORECARD_FORMAT, falsifier_text
from replikit.scoring.fidelity import describe


def _fmt(x: float | None) -> str:
    return "n/a" if x is None or x != x else f"{x:.3f}"  # undefined or NaN


def load_benchmark(path: str) -> dict:
    """A benchmark JSON as a titled list of (key, value) rows; numbers formatted, nested values as JSON."""
    raw = read_json(path)
    rows = []
    for key, value in raw.items():
        if isinstance(value, float):
            value = f"{value:.4g}"
        elif isinstance(value, (dict, list)):
            value = json.dumps(value)
        rows.append((key, str(value)))
    p = Path(path)
    return {"name": f"{p.parent.name}/{p.stem}", "path": str(p), "rows": rows}


# The report's groups of rows counted apart, in order: (row_kind, heading).
APART_GROUPS = (
    ("cannot discriminate",
     "Cannot discriminate: paper claims whose falsifier, or a part of it, reads replicated too "
     "(the complementary bound of a two-sided claim excepted), so the "
     "experiment could not tell the effect from its absence (not counted as replications)"),
    ("falsifier inconclusive",
     "Falsifier inconclusive: replicated paper claims whose falsifier neither reads not "
     "replicated nor differs from the claim significantly on the same seeds (the paired "
     "contrast), so nothing here shows the experiment could have failed (not counted as "
     "replications)"),
    ("falsifier not measured",
     "Falsifier not measured: paper claims whose falsifier gives no evidence here (its runs "
     "are not trained in this configuration, or none of its parts carries evidence), so "
     "nothing here shows the experiment could have failed (not counted as replications)"),
    ("falsifier fixed by its pilot",
     "Falsifier fixed by its pilot: paper claims whose margin was sized from the pilot's value "
     "of the very statistic their falsifier reads, so the falsifier's 'not replicated' was "
     "expected and shows only that the pilot's contrast held again (not counted as "
     "replications)"),
    ("falsifier of our construction",
     "Falsifier of our construction: paper claims whose falsifier's setting is ours, not a "
     "contrast the paper itself draws, so its effect may vanish there for reasons of ours "
     "(not counted as replications)"),
    ("falsifier outcome known before",
     "Falsifier outcome known before: paper claims whose falsifier's outcome was seen or "
     "expected before the verdict runs, so it tests nothing (not counted as replications)"),
    ("changed after its seeds were seen",
     "Changed after its seeds were seen: paper claims whose code, definition, settings or "
     "seeds differ from the registration committed before their seeds were run "
     "(config/registrations), until fresh seeds judge them (not counted as replications)"),
    ("known from its pilot",
     "Known from its pilot: paper claims whose pilot ran at their verdict settings, so the "
     "outcome was seen before the verdict seeds ran and they confirm it rather than test it "
     "(not counted as replications)"),
    ("seen seeds only",
     "Seen seeds only: paper claims whose margin, statistic or settings were fixed after these "
     "seeds had been seen, with no fresh seeds at this scale (config key <paper>.seen_seeds), "
     "so their verdict is not a test (not counted as replications)"),
    ("check",
     "Checks: paper claims that hold by construction in this implementation (no setting could "
     "flip them; not counted as replications)"),
    ("background",
     "Background: sentences that report earlier work or define the effect (the paper states "
     "them; they are not its own findings, and are counted apart)"),
    ("hypothesis",
     "Hypotheses: our reading beyond the papers' sentences (judged by the same rule, never "
     "counted as replications of a paper)"),
)


def row_kind(claim: dict) -> str:
    """`paper` (the paper's own finding, with a falsifier: counted as a replication), `check` (a paper
    claim that holds by construction: Claim.check), `cannot discriminate` (a paper claim whose
    falsifier, or a part of it, reads "replicated" too), `falsifier inconclusive` (a replicated paper claim
    whose falsifier neither reads "not replicated" nor differs from it significantly on the same seeds),
    `falsifier not measured` (a paper claim measured here whose
    falsifier gives no evidence: replikit.scoring.claims.falsifier_measured), `falsifier fixed by its
    pilot` (a paper claim whose falsifier reads the statistic whose pilot value sized the margin:
    Falsifier.sized_by_pilot), `seen seeds only` (a
    replication judged only on seeds seen before its margin was fixed: config key <paper>.seen_seeds),
    `background`
    (a paper claim whose sentence reports earlier work or defines the effect: Source.background) or
    `hypothesis` (our reading beyond the sentence)."""
    if claim["kind"] == "paper" and (claim.get("source") or {}).get("background"):
        return "background"
    apart = [k for k, _ in APART_GROUPS if k not in ("background", "hypothesis")]
    if claim["kind"] == "paper" and claim.get("standing") in apart:
        return claim["standing"]
    return claim["kind"]


ROW_KINDS = (("paper", "paper claims with a falsifier (replications)"),
             ("cannot discriminate", "paper claims that cannot discriminate (their falsifier reads "
                                     "replicated too; not counted as replications)"),
             ("falsifier inconclusive", "replicated paper claims whose falsifier is inconclusive and not "
                                        "significantly different from them (not counted as replications)"),
             ("falsifier not measured", "paper claims whose falsifier gives no evidence here (not counted "
                                        "as replications)"),
             ("falsifier fixed by its pilot", "paper claims whose falsifier reads the statistic whose "
                                              "pilot value sized the margin, so its 'not replicated' was "
                                              "expected (not counted as replications)"),
             ("falsifier of our construction", "paper claims whose falsifier's setting is ours, not a "
                                               "contrast the paper draws (not counted as replications)"),
             ("falsifier outcome known before", "paper claims whose falsifier's outcome was known before "
                                                "the verdict runs (not counted as replications)"),
             ("changed after its seeds were seen", "paper claims whose code, definition, settings or seeds "
                                                   "differ from their registration, made before their seeds "
                                                   "were seen (not counted as replications)"),
             ("known from its pilot", "paper claims whose pilot ran at their verdict settings, so the "
                                      "outcome was seen before the verdict seeds ran (not counted as "
                                      "replications)"),
             ("seen seeds only", "paper claims judged only on seeds seen before their margin, statistic or "
                                 "settings were fixed (not counted as replications)"),
             ("check", "checks (paper claims that hold by construction; not counted as replications)"),
             ("background", "background claims (the sentence reports earlier work or defines the effect)"),
             ("hypothesis", "hypotheses (ours)"))


VERDICT_ORDER = ("replicated", "not replicated", "inconclusive", "not measured")


def measured(claim: dict) -> bool:
    """Whether a claim was measured: measurable at this scale and with at least one part (a row
    that records no `parts` at all counts as measured)."""
    return bool(claim.get("measurable", True)) and claim.get("parts", [None]) != []


def seeds_text(claim: dict) -> str:
    """The row's seed count and which seeds: "5 (seeds 10-14)"; the count alone for a row that does
    not name its seeds (a scorecard from before rows did)."""
    seeds = claim.get("seeds")
    return f"{claim['n_seeds']} (seed{'s' * (len(seeds) > 1)} {seed_list(seeds)})" if seeds else \
        str(claim["n_seeds"])


def seed_set_lines(claim: dict) -> list[str]:
    """For a row judged on two seed sets (config key <paper>.fresh_seeds): one line per set naming its
    seeds and role, with its verdict; the set that is not the headline also with its parts' means and
    intervals and its falsifier's verdict (the headline's are the row's own)."""
    lines = []
    for s in claim.get("seed_sets") or []:
        line = f"seeds {seed_list(s['seeds'])} ({s['role']}): {s['verdict']}"
        if not s.get("headline"):
            line += "".join(f"; {p['label']}: {_fmt(p['mean'])} [{_fmt(p['ci_low'])}, {_fmt(p['ci_high'])}] "
                            f"({p['verdict']})" for p in s.get("parts") or [])
            if s.get("falsifier"):
                line += f"; its falsifier: {s['falsifier']['verdict']}"
        lines.append(line)
    return lines


def shown_verdict(claim: dict) -> str:
    """The verdict the report shows: "not measured" for a claim that was not measured (its
    claims.json keeps the verdict the rule gave it, inconclusive)."""
    return claim["verdict"] if measured(claim) else "not measured"


def tally(claims: list[dict]) -> Counter:
    """How many claims got each verdict, an unmeasured claim counted as "not measured"."""
    return Counter(shown_verdict(c) for c in claims)


def verdict_counts(papers: list[dict]) -> list[str]:
    """Per scale: how many of the papers' own claims got each verdict and their fidelity; then the same
    for background claims and for our hypotheses, counted apart (neither is a replication of the
    paper's own finding)."""
    lines = []
    for scale in dict.fromkeys(p["scale"] for p in papers):
        for kind, noun in ROW_KINDS:
            claims = [c for p in papers if p["scale"] == scale for c in p["claims"] if row_kind(c) == kind]
            if not claims:
                continue
            n = tally(claims)
            fid = Counter(c["fidelity"] for c in claims)
            parts = [f"{n[v]} {v}" for v in VERDICT_ORDER]
            lines.append(f"{scale}: {len(claims)} {noun}: " + ", ".join(parts) + " ("
                         + ", ".join(f"{fid[f]} {f}" for f in FIDELITIES if fid[f]) + ")")
    return lines


# One sentence per scale: what a reader is looking at (the first screen of the report).
SCALE_TEXT = {
    "smoke": "smoke: CPU proxies at toy sizes (CI's scale), 5 seeds (latent lookahead: 1, too few for a "
             "verdict), to check that every paper runs from data to report; its verdicts say little about "
             "the papers.",
    "default": "default: CPU proxies sized to run in hours on a laptop, 5 seeds; each row lists how it "
               "departs from its paper.",
    "paper": "paper: the papers' own settings (a GPU cluster), 5 seeds.",
    "preflight": "preflight: the papers' own settings with budgets cut to a few steps, 1 seed: every row is "
                 "inconclusive by design.",
}


def headline(papers: list[dict]) -> dict:
    """The report's title, "Replications of 9 papers — smoke scale, 2026-11-28, commit 688b9ef", and
    the line under it: the date (UTC) the scorecards were written and the commit(s) of the code that
    wrote them, from their provenance (`created`, `git_commit`); without any, today and the
    checkout's commit."""
    provs = [p.get("provenance") or {} for p in papers]
    dates = sorted(str(pr["created"])[:10] for pr in provs if pr.get("created"))
    commits = list(dict.fromkeys(str(pr["git_commit"]) for pr in provs if pr.get("git_commit"))) \
        or [git_commit()]
    date = dates[-1] if dates else dt.datetime.now(dt.timezone.utc).date().isoformat()
    short = [c.split("+")[0][:7] + ("+dirty" if c.endswith("+dirty") else "") for c in commits]
    n = len(dict.fromkeys(p.get("paper_name", p["paper"]) for p in papers))
    scales = list(dict.fromkeys(p["scale"] for p in papers))
    scale = f"{' and '.join(scales)} scale{'s' * (len(scales) > 1)}, " if scales else ""
    title = (f"Replications of {n} paper{'s' * (n != 1)} — {scale}{date}, "
             f"commit{'s' * (len(short) > 1)} {', '.join(short)}")
    when = f"{dates[0]} to {dates[-1]}" if dates and dates[0] != dates[-1] else date
    made = (f"Scorecards written {when} (UTC) at commit{'s' * (len(commits) > 1)} {', '.join(commits)}"
            if dates else f"Rendered {date} (UTC) at commit {', '.join(commits)}") + "."
    return {"title": title, "date": date, "commits": short, "made": made}


def subset_banners(papers: list[dict]) -> list[dict]:
    """One banner per dataset that ran on a subset (a scorecard's `data_source`), naming the papers
    that read it: the report says it once, not once per paper."""
    by_source: dict[str, list[str]] = {}
    titles: dict[str, str] = {}
    for p in papers:
        if p.get("subset"):
            names = by_source.setdefault(str(p.get("data_source", "")), [])
            names += [p["paper"]] if p["paper"] not in names else []
            titles[str(p.get("data_source", ""))] = subset_title(p)
    return [{"source": source, "title": titles[source], "papers": names}
            for source, names in by_source.items()]


# The paper's rows that are not replications, as the per-paper line names them ("2 checks").
NOT_COUNTED = (("cannot discriminate", "cannot discriminate", "cannot discriminate"),
               ("falsifier inconclusive", "with its falsifier inconclusive",
                "with their falsifier inconclusive"),
               ("falsifier not measured", "with its falsifier not measured",
                "with their falsifier not measured"),
               ("falsifier fixed by its pilot", "with its falsifier fixed by its pilot",
                "with their falsifier fixed by their pilot"),
               ("known from its pilot", "known from its pilot", "known from their pilot"),
               ("changed after its seeds were seen", "changed after its seeds were seen",
                "changed after their seeds were seen"),
               ("falsifier of our construction", "with a falsifier of our construction",
                "with falsifiers of our construction"),
               ("falsifier outcome known before", "with its falsifier's outcome known before",
                "with their falsifiers' outcome known before"),
               ("seen seeds only", "on seen seeds only", "on seen seeds only"),
               ("check", "check", "checks"), ("background", "background", "background"))


def paper_lines(papers: list[dict]) -> list[dict]:
    """Per paper, for the first screen: its title, arXiv id(s) and a line of verdict counts of its
    replications (claims with a falsifier), naming its other claims, which are not counted."""
    out = []
    for p in papers:
        kinds = [row_kind(c) for c in p["claims"]]
        own = [c for c, k in zip(p["claims"], kinds, strict=True) if k == "paper"]
        n = tally(own)
        counts = ", ".join(f"{n[v]} {v}" for v in VERDICT_ORDER if n[v]) or "none"
        others = ", ".join(f"{kinds.count(k)} {one if kinds.count(k) == 1 else many}"
                           for k, one, many in NOT_COUNTED if kinds.count(k))
        seeds = len(p.get("seeds", []))
        out.append({"paper": p["paper"], "title": (p.get("title") or p["paper"]) + _on_dataset(p["paper"]),
                    "arxiv": p.get("arxiv", ""),
                    "line": f"{_count(len(own), 'replication')} of the paper's claims at {p['scale']} "
                            f"({_count(seeds, 'seed')}): {counts}"
                            + (f"; not counted: {others}" if others else "") + _earlier_call(p)})
    return out


def _on_dataset(section: str) -> str:
    """" — on dataset blobs" for a section on a dataset other than its paper's own, else ""."""
    return f" — on dataset {section.split('@', 1)[1]}" if "@" in section else ""


def _earlier_call(card: dict) -> str:
    """What a section made by an earlier call says: this call did not make or check it."""
    if not card.get("earlier_call"):
        return ""
    made = str((card.get("provenance") or {}).get("created") or "")[:10]
    return (f" (from an earlier call{', ' + made if made else ''}: this call did not make it; its figures "
            "and scorecard are shown as they were)")


def _count(n: int, noun: str) -> str:
    """A count and its noun, singular for one: "1 claim", "3 claims"."""
    return f"{n} {noun}{'' if n == 1 else 's'}"


# What the report says when config key report.cost_plan is false (rule cost_plan is not in the DAG).
COST_PLAN_HINT = {"command": "snakemake --cores 1 --config 'report={cost_plan: true}'",
                  "alone": "python -m replikit.plan config/paper.yaml"}


def _hours(h: float) -> str:
    return f"{h:,.0f}" if h >= 10 else f"{h:.1f}" if h >= 0.95 else f"{h:.2f}"


def _longest(h: float) -> str:
    return f"{h:.1f}" if h >= 0.95 else f"{h:.2f}"


def cost_plan(path: str) -> dict:
    """The report's "Cost of the paper scale" from the plan JSON of rule cost_plan
    (replikit.plan.bill.document): sums per paper and overall, the assumptions, the flagged jobs."""
    doc = read_json(path)
    a = doc["assumptions"]
    accelerators = list(a["peaks_tflops"])
    first = accelerators[0]
    jobs = doc["jobs"]

    def sums(name: str, sel: list[dict]) -> dict:
        longest = max(sel, key=lambda j: j["hours"][first])
        peak = max(sel, key=lambda j: j["peak_bytes"])
        return {"paper": name, "jobs": len(sel), "pflop": f"{sum(j['flops'] for j in sel) / 1e15:,.0f}",
                "hours": [_hours(sum(j["hours"][acc] for j in sel)) for acc in accelerators],
                "longest": f"{_longest(longest['hours'][first])} h ({longest['run']})",
                "peak": f"{peak['peak_bytes'] / 1e9:.1f} GB ({peak['run']})",
                "flagged": sum(bool(j["flags"]) for j in sel)}

    papers = list(dict.fromkeys(j["paper"] for j in jobs))
    rows = [sums(p, [j for j in jobs if j["paper"] == p]) for p in papers]
    flagged: dict[tuple[str, str], list[dict]] = {}
    for j in jobs:
        for flag in j["flags"]:
            flagged.setdefault((j["rule"], flag), []).append(j)
    peaks = "; ".join(f"{acc} " + " / ".join(f"{p[k]:g}" for k in ("tf32", "fp32", "bf16"))
                      for acc, p in a["peaks_tflops"].items())
    assumptions = [
        "Predictions, not measurements: no GPU has run these jobs, and none was measured for this plan. "
        "Each training step is counted on the CPU at the paper's real shapes under FakeTensorMode "
        "(shapes without storage: nothing is allocated); evaluation passes are not counted.",
        f"Time per step = max(compute, launches). Compute: convolution FLOPs at the TF32 peak, other FLOPs "
        f"at the bf16 peak under bf16 autocast, else the fp32 peak, at {a['utilisation']:.0%} of the dense "
        f"peak (assumed utilisation). Launches: dispatched aten ops x {a['launch_us']:g} us each (assumed "
        "host overhead per op of eager PyTorch).",
        f"Dense peaks (TFLOP/s, TF32 / fp32 / bf16, the vendors' figures): {peaks}.",
        "Peak memory: the live tensors of one steady-state training step (MemTracker under FakeTensorMode), "
        "without the CUDA context, cuDNN/cuBLAS workspaces or fragmentation; compared with the gpu_mem_mb "
        "requested for the job's rule (profiles/gpu, or the paper's resources) and with a GPU's "
        f"{a['gpu_gb']:g} GB.",
    ]
    return {"source": ", ".join(doc["sources"]), "seeds": len(doc["seeds"]), "accelerators": accelerators,
            "rows": rows, "total": sums("total", jobs), "assumptions": assumptions,
            "n_flagged": sum(bool(j["flags"]) for j in jobs), "n_jobs": len(jobs),
            "flagged": [{"rule": rule, "flag": flag, "jobs": len(js),
                         "runs": ", ".join(dict.fromkeys(j["run"] for j in js))}
                        for (rule, flag), js in flagged.items()],
            "not_planned": doc["not_planned"], "gpu": f"{a['gpu_gb']:g} GB"}


def with_deviation_text(card: dict) -> dict:
    """The deviations every row with deviations shares, said once per paper (`card["deviation_text"]`),
    and each row's own further ones (`c["own_deviation_text"]`), so no list is repeated row by row."""
    rows = [c for c in card["claims"] if c["deviations"]]
    common = [d for d in rows[0]["deviations"] if all(d in c["deviations"] for c in rows[1:])] if rows else []
    card["deviations"] = common
    card["deviation_text"] = describe(common)
    for c in card["claims"]:
        c["own_deviation_text"] = describe([d for d in c["deviations"] if d not in common])
        c["deviation_text"] = describe(c["deviations"]) or "none: the paper's own settings"
    return card


def config_groups(figures: list[dict]) -> list[dict]:
    """One entry per distinct (paper, config) among the figures, with the figures that used it and an
    anchor: the report shows each config once and links each figure to it."""
    groups: dict[tuple[str, str], dict] = {}
    for f in figures:
        text = json.dumps(f["provenance"].get("config", {}), sort_keys=True)
        g = groups.setdefault((f["paper"], text), {"paper": f["paper"], "config": text, "figures": [],
                                                    "anchor": f"config-{f['paper']}-{len(groups) + 1}"})
        g["figures"].append(f["name"])
        f["config_anchor"] = g["anchor"]
    return list(groups.values())


def computed_at(prov: dict) -> str:
    """The commits whose code computed a figure's or scorecard's runs, e.g. `abc1234567 (40 runs)`;
    `unknown` for runs that recorded none."""
    groups = [g for g in prov.get("runs") or [] if isinstance(g, dict)]
    return ", ".join(f"{str(g.get('commit') or 'unknown')[:10]}{'+dirty' if g.get('dirty') else ''} "
                     f"({g['n_runs']} run{'s' * (g['n_runs'] != 1)})" for g in groups) or "unknown"


def load_ladder(path: str) -> dict:
    """A scale-ladder summary (results/ladder/<paper>[.<name>]/ladder.json, `replikit.plan.ladder summary`)
    as the templates show it: its rungs with predicted and measured hours, the claim part x rung
    table, its Markdown section and its figure."""
    from replikit.reporting.ladder_summary import markdown, rung_rows, table

    record = read_json(path)
    png = Path(path).with_name("ladder.png")
    return {"paper": record["paper"], "ladder": record.get("ladder", record["paper"]),
            "rungs": rung_rows(record), "table": table(record),
            "markdown": MarkdownBlock(markdown(record)),
            "figure": base64.b64encode(png.read_bytes()).decode() if png.is_file() else None}


def section_folder(path: str | Path) -> Path:
    """The folder of the section a scorecard (…/claims.json) or figure (…/figures/<name>.png) is in:
    results/<paper> or results/<paper>/on-<dataset>."""
    p = Path(path)
    return p.parent.parent if p.parent.name == "figures" else p.parent


def section_of(paper: str, path: str | Path) -> str:
    """How the report names the section of `paper`'s scorecard or figure at `path`: "<paper>" on the
    paper's own data, "<paper>@<dataset>" on another, so that two datasets of one paper never share
    an anchor or a row."""
    folder = section_folder(path)
    return f"{paper}@{folder.name[len(ON_DATASET):]}" if folder.name.startswith(ON_DATASET) else paper


def section_in_tree(path: str | Path) -> str:
    """The section of a scorecard at results/<paper>[/on-<dataset>]/claims.json, from its path alone
    (how the report rule names its forest plot before the scorecard exists)."""
    folder = section_folder(path)
    return section_of(folder.parent.name if folder.name.startswith(ON_DATASET) else folder.name, path)


def section_dir(section: str) -> str:
    """A section's folder relative to results/ (how the Markdown report links its figures)."""
    paper, _, dataset = section.partition("@")
    return f"{paper}/{ON_DATASET}{dataset}" if dataset else paper


def scorecards_in(results: Path) -> list[Path]:
    """Every scorecard under `results`: results/<paper>/claims.json and, on datasets other than a
    paper's own, results/<paper>/on-<dataset>/claims.json."""
    return sorted([*results.glob("*/claims.json"), *results.glob(f"*/{ON_DATASET}*/claims.json")])


def earlier_sections(made: list[str], results: Path = Path("results"), scale: str | None = None) -> list[str]:
    """The scorecards under `results` that this call does not make (`made`): an earlier call's, on
    another dataset or of a paper this call leaves out, at this call's `scale`. The report shows them
    too, each marked, so that a call of one paper replaces only its own section and two datasets
    share one report."""
    ours = {Path(p).as_posix() for p in made}
    return [p.as_posix() for p in scorecards_in(results) if p.as_posix() not in ours and _scorecard(p, scale)]


def earlier_papers(claims_paths: list[str]) -> list[str]:
    """The papers the sections of `claims_paths` are of, each once ("continual_learning" for
    results/continual_learning/on-blobs/claims.json)."""
    return list(dict.fromkeys(section_in_tree(p).partition("@")[0] for p in claims_paths))


def _scorecard(path: Path, scale: str | None) -> bool:
    """Whether `path` is a scorecard the report can show beside this call's: one in today's format
    (claims.SCORECARD_FORMAT) at this call's `scale` (None: any). An unreadable file, or one an older
    format wrote, is left out of the report rather than stopping it: its paper's next call writes it
    again."""
    try:
        card = read_json(path)
    except (OSError, ValueError):
        return False
    return (isinstance(card, dict) and card.get("format") == SCORECARD_FORMAT
            and (scale is None or card.get("scale") == scale))


def section_figures(claims_paths: list[str]) -> list[str]:
    """The figures of each section whose scorecard is in `claims_paths`, with their provenance."""
    return [p.as_posix() for c in claims_paths for p in sorted((Path(c).parent / "figures").glob("*.png"))
            if p.with_suffix(".provenance.json").is_file()]


def load_inputs(claims_paths: list[str], figure_paths: list[str], benchmark_paths: list[str],
                forest_paths: list[str] | None = None, cost_plan_path: str | None = None,
                ladder_paths: list[str] | None = None, code: dict[str, str] | None = None,
                earlier: list[str] | None = None) -> dict:
    """Everything the templates show; `cost_plan_path`: the plan JSON of rule cost_plan, or None when
    config key report.cost_plan is false (the report then says how to get that section);
    `ladder_paths`: the scale-ladder summaries to show in the "Ladder" section; `code`: today's code
    hash per module (papers.registry.code_hashes), against which each scorecard and figure is
    flagged when older code computed its runs; `earlier`: those of `claims_paths` that an earlier call
    made (`earlier_sections`), each marked as such."""
    papers = [with_deviation_text(read_json(p)) for p in claims_paths]
    for card, path in zip(papers, claims_paths, strict=True):
        card["paper_name"], card["paper"] = card["paper"], section_of(card["paper"], path)
        card["earlier_call"] = str(path) in {str(e) for e in earlier or ()}
    for card in papers:
        card["subset_title"] = subset_title(card)  # "CIFAR-10 subset", "" for full data
    for card in papers:
        card["stale"] = stale(card.get("provenance") or {}, code or {})
        card["uncommitted"] = uncommitted(card.get("provenance") or {})
        card["other_kernels"] = other_kernels(card.get("provenance") or {})
        for c in card["claims"]:  # an unmeasured row reads "not measured" in every column of its own
            c["measured"], c["shown_verdict"] = measured(c), shown_verdict(c)
            c["shown_magnitude"] = c["magnitude"] if c["measured"] else "not measured"
            c["falsifier_text"] = falsifier_text(c)
            c["seeds_text"], c["seed_set_lines"] = seeds_text(c), seed_set_lines(c)
    figures = []
    for png in figure_paths:
        p = Path(png)
        prov = read_json(p.with_suffix(".provenance.json"))
        section = section_of(prov["paper"], p)
        figures.append({"name": p.stem, "paper": section, "dir": section_dir(section), "path": str(p),
                        "data": base64.b64encode(p.read_bytes()).decode(), "caption": prov["caption"],
                        "provenance": prov, "stale": stale(prov, code or {}),
                        "uncommitted": uncommitted(prov), "other_kernels": other_kernels(prov),
                        "computed_at": computed_at(prov)})
    link_claims_and_figures(papers, figures)
    forests = [{"paper": Path(f).stem, "file": Path(f).name,
                "data": base64.b64encode(Path(f).read_bytes()).decode()} for f in forest_paths or []]
    labels = {"faithful": "Faithful: the paper's own settings",
              "unverified": "Unverified: the paper-scale settings, never checked against the paper's text",
              "proxy": "Proxy: settings that depart from the paper (listed per claim)",
              "preflight": "Preflight: the paper's settings with budgets cut (inconclusive by design)"}
    groups = [(label, [(paper, c) for paper in papers for c in paper["claims"]
                       if row_kind(c) == "paper" and c["fidelity"] == fid]) for fid, label in labels.items()]
    groups += [(heading, [(paper, c) for paper in papers for c in paper["claims"] if row_kind(c) == kind])
               for kind, heading in APART_GROUPS]
    return {"headline": headline(papers), "subsets": subset_banners(papers),
            "papers": papers, "figures": figures, "configs": config_groups(figures), "forests": forests,
            "counts": verdict_counts(papers), "paper_lines": paper_lines(papers),
            "scale_text": [SCALE_TEXT[s] for s in dict.fromkeys(p["scale"] for p in papers)
                           if s in SCALE_TEXT],
            "groups": [g for g in groups if g[1]],
            "preflight": any(p["scale"] == "preflight" for p in papers),
            "benchmarks": [load_benchmark(p) for p in benchmark_paths],
            "cost": cost_plan(cost_plan_path) if cost_plan_path else None, "cost_hint": COST_PLAN_HINT,
            "ladders": [load_ladder(p) for p in ladder_paths or []],
            "across_scales": published_across_scales()}


def published_across_scales() -> dict | None:
    """The published verdicts of every claim at every published scale and rung (docs/published/, the
    one table across scales: replikit.reporting.docs.across_scales), shown beside this run's; None when
    nothing is published (an installed copy without the docs)."""
    from replikit.reporting import docs

    snaps = docs.load_snapshots() if docs.PUBLISHED.is_dir() else {}
    if not any(s.get("kind") == "scorecard" for s in snaps.values()):
        return None
    head, rows = docs.across_scales(snaps)
    return {"head": head, "rows": rows}


def figure_anchor(paper: str, figure: str) -> str:
    return f"fig-{paper}-{figure}"


def claim_anchor(paper: str, claim: str) -> str:
    return f"claim-{paper}-{claim}"


def link_claims_and_figures(papers: list[dict], figures: list[dict]) -> None:
    """Each claim gets `anchor` and `figure_links` (its declared figures that the report shows, with
    their anchors); each figure gets `anchor` and `claim_links` (the claims that name it), so that the
    report links every claim to its figures and every figure to its claims."""
    shown = {(f["paper"], f["name"]) for f in figures}
    by_figure: dict[tuple[str, str], list[dict]] = {}
    for card in papers:
        for c in card["claims"]:
            c["anchor"] = claim_anchor(card["paper"], c["id"])
            c["figure_links"] = [{"name": f, "anchor": figure_anchor(card["paper"], f)}
                                 for f in c.get("figures") or () if (card["paper"], f) in shown]
            for f in c.get("figures") or ():
                by_figure.setdefault((card["paper"], f), []).append({"id": c["id"], "anchor": c["anchor"]})
    for f in figures:
        f["anchor"] = figure_anchor(f["paper"], f["name"])
        f["claim_links"] = by_figure.get((f["paper"], f["name"]), [])


class MarkdownBlock(str):
    """Markdown that the Markdown report inserts as it is (e.g. a table of its own), unescaped."""


# The report's text beyond `text.human` (kept here, not in replikit.core.text: every paper module's
# code hash covers that file, so a change there would flag every result as computed by older code).
# Inline math: $...$ that neither starts nor ends with a space ("$5 and $10" is not math).
_MATH = re.compile(r"(?<![\\$])\$(?!\s)([^$]+?)(?<![\s\\])\$")
_GREEK = dict(zip(("alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu nu xi omicron pi rho "
                   "sigma tau upsilon phi chi psi omega").split(), "αβγδεζηθικλμνξοπρστυφχψω", strict=True))
_SYMBOLS = {**{f"\\{g}": u for g, u in _GREEK.items()},
            **{f"\\{g.capitalize()}": u.upper() for g, u in _GREEK.items()},
            "\\varepsilon": "ε", "\\varphi": "φ", "\\ell": "ℓ", "\\infty": "∞", "\\cdot": "·",
            "\\times": "×", "\\leq": "≤", "\\le": "≤", "\\geq": "≥", "\\ge": "≥", "\\neq": "≠",
            "\\approx": "≈", "\\sim": "~", "\\propto": "∝", "\\pm": "±", "\\to": "→", "\\sqrt": "√",
            "\\log": "log", "\\exp": "exp", "\\,": " ", "\\;": " ", "\\!": ""}
_SUPER = str.maketrans("0123456789+-=()n", "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ⁿ")
_SUB = str.maketrans("0123456789+-=()", "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎")
_ABOUT = "\ue07e"  # a "~" that means "about", hidden from text.plain (which reads every "~" as a tie)


def _script(body: str, table: dict, mark: str) -> str:
    """A sub- or superscript in Unicode where every character has one, else `_(...)` / `^(...)`."""
    out = body.translate(table)
    if all(ord(ch) > 127 for ch in out):
        return out
    return f"{mark}{body}" if len(body) == 1 else f"{mark}({body})"


def _math(m: re.Match) -> str:
    """One inline formula as Unicode text: $\\mu$P -> μP, $1/\\sqrt{\\text{depth}}$ -> 1/√depth,
    $L^2$ -> L²."""
    text = re.sub(r"\\(?:text|mathrm|mathit|mathbf|operatorname)\{([^{}]*)\}", r"\1", m.group(1))
    text = re.sub(r"\\[A-Za-z]+|\\[,;!]", lambda s: _SYMBOLS.get(s.group(0), s.group(0)), text)
    text = re.sub(r"([_^])(?:\{([^{}]*)\}|(\S))",
                  lambda s: _script(s.group(2) if s.group(2) is not None else s.group(3),
                                    _SUPER if s.group(1) == "^" else _SUB, s.group(1)), text)
    text = re.sub(r"√\{([^{}]*)\}", lambda s: "√" + (s.group(1) if re.fullmatch(r"\w+", s.group(1))
                                                       else f"({s.group(1)})"), text)
    return text.replace("{", "").replace("}", "")


def _protect(value: object) -> object:
    """Strings (in lists and dicts too) with their inline math as Unicode, a tie between words
    (Sec.~3) as a space and any other "~" ("T_opt ~ 1/K", "(~0.9)": about) hidden from text.plain."""
    if isinstance(value, str):
        value = re.sub(r"(?<=[\w.}])~(?=[\w\\])", " ", _MATH.sub(_math, value))
        return value.replace("~", _ABOUT)
    if isinstance(value, (list, tuple)):
        return [_protect(v) for v in value]
    if isinstance(value, dict):
        return {k: _protect(v) for k, v in value.items()}
    return value


def readable(value: object) -> str:
    """`value` as the report prints it: `text.human` (no None, list repr or LaTeX markup), with the
    papers' inline math as Unicode ($\\mu$P -> μP) and a "~" that means "about" kept (T_opt ~ 1/K)."""
    return human(_protect(value)).replace(_ABOUT, "~")


def md_escape(value: object) -> object:
    """Every value the Markdown template prints, as a person writes it (`text.human`: no None, list
    repr or LaTeX), with `|` escaped, so that a label such as `|grad W_Q|` stays in its table cell
    instead of splitting the row, and `~` escaped, so that "T_opt ~ 1/K" keeps its tilde where a
    renderer reads single tildes as strikethrough (MarkdownBlock: left as it is)."""
    if isinstance(value, MarkdownBlock):
        return value
    return readable(value).replace("|", "\\|").replace("~", "\\~")


def md_code(value: object) -> MarkdownBlock:
    """A value the Markdown template prints inside a code span (`...`): as it is, but for `|`, which
    a table cell needs escaped even there (no other escape works inside a code span)."""
    return MarkdownBlock(str(value).replace("|", "\\|"))


def html_value(value: object) -> object:
    """Every value the HTML template prints, as `readable` writes it (escaped after, by jinja)."""
    if isinstance(value, (jinja2.runtime.Undefined, markupsafe.Markup)):
        return value
    return readable(value)


def render(template_dir: str, inputs: dict, html_out: str, md_out: str) -> None:
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(template_dir), autoescape=False,
                             undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                             finalize=md_escape)
    env.filters["f3"] = _fmt
    env.filters["code"] = md_code
    html_env = jinja2.Environment(loader=jinja2.FileSystemLoader(template_dir),
                                  autoescape=jinja2.select_autoescape(["html", "j2"]),
                                  undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=True,
                                  finalize=html_value)
    html_env.filters["f3"] = _fmt
    write_text(md_out, env.get_template("report.md.j2").render(**inputs, figure_dir=Path(md_out).parent))
    write_text(html_out, html_env.get_template("report.html.j2").render(**inputs))


def verdict_table(cards: list[dict]) -> str:
    """A Markdown table of every claim's verdicts and numbers, as docs/verdicts.md shows them:
    `python -m replikit.reporting.report results/*/claims.json`."""
    lines = ["| claim | kind | direction | magnitude | fidelity | ours: mean [CI] per part |",
             "|---|---|---|---|---|---|"]
    for card in cards:
        for c in card["claims"]:
            parts = "; ".join(f"{_fmt(p['mean'])} [{_fmt(p['ci_low'])}, {_fmt(p['ci_high'])}]"
                              for p in c["parts"])
            cell = "; ".join(x for x in (parts, c["note"]) if x) or "-"
            lines.append(f"| {c['id']} | {c['kind']} | {c['verdict']} | {c['magnitude']} | {c['fidelity']} "
                         f"| {cell} |")
    return "\n".join(lines)


if __name__ == "__main__":
    import sys

    print(verdict_table([read_json(p) for p in sys.argv[1:]]))
