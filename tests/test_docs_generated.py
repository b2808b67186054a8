"""Every number a reader sees comes from a run (issue 62).

README.md and docs/*.md show results only inside generated blocks, written by
`python -m replikit.reporting.docs` from the snapshots under docs/published/; these tests fail when
a committed document differs from what the generator writes, when a snapshot changes without the
documents being regenerated, and when a hand-typed result number stands outside a generated block.
"""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import pytest

from replikit.reporting import docs
from tests.conftest import ROOT


def test_the_committed_documents_are_what_the_generator_writes():
    stale = [str(p.relative_to(ROOT)) for p in docs.differing(ROOT)]
    assert not stale, f"generated blocks differ in {stale}: python -m replikit.reporting.docs"


def test_every_generated_block_name_is_known_and_used():
    used = {m.group("name") for p in docs.documents(ROOT) for m in docs.MARK.finditer(p.read_text())}
    assert used <= set(docs.BLOCKS), used - set(docs.BLOCKS)
    assert set(docs.BLOCKS) <= used, f"blocks no document shows: {set(docs.BLOCKS) - used}"


def _copy(tmp_path: Path) -> tuple[Path, Path]:
    root = tmp_path / "repo"
    (root / "docs").mkdir(parents=True)
    shutil.copy2(ROOT / "README.md", root / "README.md")
    for page in (ROOT / "docs").glob("*.md"):
        shutil.copy2(page, root / "docs" / page.name)
    published = tmp_path / "published"
    shutil.copytree(docs.PUBLISHED, published)
    return root, published


def test_the_readme_fits_about_one_screen():
    assert len((ROOT / "README.md").read_text().splitlines()) <= 120, "README.md: at most 120 lines"


def test_a_snapshot_changed_without_regenerating_fails(tmp_path):
    root, published = _copy(tmp_path)
    assert docs.differing(root, published) == {}
    smoke = json.loads((published / "scorecard-smoke.json").read_text())
    smoke["papers"]["benign_memorization"]["BM-1"]["verdict"] = "not replicated"
    (published / "scorecard-smoke.json").write_text(json.dumps(smoke))
    assert root / "README.md" in docs.differing(root, published)
    plan = json.loads((published / "plan-paper.json").read_text())
    plan["total"]["h100_h"] += 100
    (published / "plan-paper.json").write_text(json.dumps(plan))
    changed = docs.differing(root, published)
    assert root / "docs/planning-the-paper-scale.md" in changed
    # regenerated, the copies agree again
    for path, text in changed.items():
        path.write_text(text)
    assert docs.differing(root, published) == {}


def test_a_snapshot_made_by_older_code_is_marked_stale():
    snap = {"made_by": {"commit": "0" * 40, "dirty": False,
                        "code": {"replikit.reporting.docs": "not-today's-hash"}}}
    assert docs.made_by_line(snap, "republish").startswith("**Stale:**")
    snap["made_by"]["code"] = {"replikit.reporting.docs": docs.code_hash("replikit.reporting.docs")}
    assert "today's code" in docs.made_by_line(snap, "republish")
    snap["made_by"]["code"] = {}
    assert "unknown" in docs.made_by_line(snap, "republish")


def test_the_smoke_snapshot_holds_the_ci_reference():
    """docs/published/scorecard-smoke.json is the smoke reference plus each claim's kind and statement:
    the two never disagree on a verdict or a mean, the claim's or its falsifier's, on which rows were
    judged on seen seeds only, or on a claim's definition."""
    ref = json.loads((ROOT / "tests/reference/smoke_scorecard.json").read_text())["papers"]
    snap = json.loads((docs.PUBLISHED / "scorecard-smoke.json").read_text())["papers"]
    kept = ("verdict", "seeds", "parts", "falsifier", "seen_only", "definition", "stability", "registration")
    assert {p: {c: {k: r[k] for k in kept if k in r} for c, r in claims.items()}
            for p, claims in snap.items()} == ref


def test_the_smoke_reference_holds_one_machine_and_the_verdicts_page_names_it():
    """Pinned numerics (replikit.core.numerics): the smoke reference and its snapshot hold no rows per
    machine, and the verdicts table names the one machine and kernel level that computed them."""
    ref = json.loads((ROOT / "tests/reference/smoke_scorecard.json").read_text())
    snaps = docs.load_snapshots()
    assert "machine_variants" not in ref and "machine_variants" not in snaps["scorecard-smoke"]
    assert ref["machine"].endswith("kernels AVX2"), ref["machine"]
    assert f"Computed on {ref['machine']}." in docs.block_scorecard_table(snaps, "smoke")


# ---------------------------------------------------------------- hand-typed numbers

CLAIM = re.compile(r"\b[A-Z]{2,3}-\d+\b")
NUM = r"[-+]?\d[\d,]*(?:\.\d+)?"
UNITS = r"%|H100-h(?:ours?)?|[CG]PU-h(?:ours?)?|job-[sh]|CPU-s|ms|s|min|h|hours?|minutes?|seconds?"
WITH_UNIT = re.compile(rf"(?<![\w.-])({NUM})(?:\s?|-)({UNITS})(?![\w-])")
DECIMAL = re.compile(r"(?<![\w.-])[-+]?\d+\.\d+(?![\w.])")
COUNT = re.compile(r"(?<![\w.-])\d+\s+(?:replicated|not replicated|inconclusive|not measured)")

# Files not scanned, and why.
EXEMPT_FILES = {
    "docs/rules.md": "generated whole by python -m replikit.papers.rule_index (no results)",
}
# Not results: settings of the method or of a tool, said with a unit. Each entry is a phrase that may
# hold a number with a unit outside a generated block, and why.
ALLOWED = {
    "default 90 %": "the verdict rule's interval level (`stats.ci_level`'s default)",
    "90 % Student-t interval": "the verdict rule's interval level",
    "all arms 0 % exact match": "a label a figure prints (quoted)",
    "100 % random-label": "a run's setting (benign memorization's random-label runs)",
    "every 60 s": "the ladder's heartbeat interval (a setting)",
    "within 2 s": "the data job's connection timeout (a setting)",
    "40 s after submitting, then every 40 s plus 10 s": "the SLURM plugin's polling (its settings)",
    "at most 180 s": "the SLURM plugin's polling (its settings)",
    "1-minute time limit": "the SLURM test's time limit (a setting of the test)",
}
# Where the generated blocks are not the rule: dated history (its numbers are as typed that day).
EXEMPT_DIRS = {
    "docs/measurements/": "dated measurement pages: each is history of one session, with its date",
    "CHANGELOG.md": "history: what changed and why, dated by session",
    "docs/published/": "the snapshots themselves (machine-written JSON) and their README",
}


def documents_scanned() -> list[Path]:
    return [p for p in docs.documents(ROOT) if str(p.relative_to(ROOT)) not in EXEMPT_FILES]


def prose_lines(text: str) -> list[tuple[int, str | None]]:
    """(line number, line) for each line outside generated blocks and fenced code (an indented fence
    too), inline code and link targets removed; None where a block or fence breaks the prose."""
    out: list[tuple[int, str | None]] = []
    fence = generated = False
    for i, line in enumerate(text.splitlines(), 1):
        if line.lstrip().startswith("```"):
            fence = not fence
            out.append((i, None))
        elif line.startswith("<!-- generated:") or line.startswith("<!-- /generated:"):
            generated = line.startswith("<!-- generated:")
            out.append((i, None))
        elif fence or generated:
            continue
        else:
            out.append((i, re.sub(r"\]\([^)]*\)", "]", re.sub(r"`[^`]*`", "", line))))
    return out


def hand_typed_numbers(text: str) -> list[tuple[int, str]]:
    """(line, number) for each result number outside generated blocks, fenced code, inline code and
    link targets: a number with a unit, a decimal on a line that names a claim id, a verdict count."""
    out = []
    for i, s in prose_lines(text):
        if s is None:
            continue
        for phrase in ALLOWED:
            s = s.replace(phrase, "")
        hits = [m.group(0) for m in WITH_UNIT.finditer(s)] + [m.group(0) for m in COUNT.finditer(s)]
        if CLAIM.search(s):
            hits += [m.group(0) for m in DECIMAL.finditer(CLAIM.sub("", s))]
        out += [(i, h) for h in hits]
    return out


def test_the_allow_list_is_printed():
    print("\nNot scanned:", *(f"  {k}: {v}" for k, v in {**EXEMPT_FILES, **EXEMPT_DIRS}.items()), sep="\n")
    print("Allowed phrases:", *(f"  {k!r}: {v}" for k, v in ALLOWED.items()), sep="\n")


def test_every_allowed_phrase_is_still_used():
    """The allow-list stays as short as the documents need."""
    texts = [re.sub(r"`[^`]*`", "", p.read_text()) for p in documents_scanned()]
    assert [k for k in ALLOWED if not any(k in t for t in texts)] == []


def test_no_hand_typed_result_numbers_outside_generated_blocks():
    found = {str(p.relative_to(ROOT)): hand_typed_numbers(p.read_text()) for p in documents_scanned()}
    found = {k: v for k, v in found.items() if v}
    assert not found, ("hand-typed result numbers (put them in a generated block from a snapshot, or move "
                       "dated history to CHANGELOG.md or docs/measurements/):\n"
                       + "\n".join(f"{k}:{i}: {h}" for k, v in found.items() for i, h in v))


@pytest.mark.parametrize("line, hits", [
    ("took 2,150 s on 2 cores", ["2,150 s"]),
    ("LL-1 +0.161 [0.124, 0.198]", ["+0.161", "0.124", "0.198"]),
    ("15 replicated, 4 not replicated", ["15 replicated", "4 not replicated"]),
    ("the 90 % Student-t interval over seeds", []),
    ("`--cores 2` and [a link](x-1.5h.md)", []),
])
def test_the_scan_finds_result_numbers_and_spares_settings(line, hits):
    assert [h for _, h in hand_typed_numbers(line)] == hits
    assert hand_typed_numbers(f"<!-- generated:x -->\n{line}\n<!-- /generated:x -->") == []


# ---------------------------------------------------------------- hand-typed verdicts

VERDICT = re.compile(r"\b(?:not replicated|replicated|inconclusive)\b", re.I)
# A verdict in quotes is a word of the rule, not a result, where the sentence says what could be read
# ("must be able to read", "false", "calls noise").
MODAL = re.compile(r"\b(?:can|cannot|could|able to|may|must|would|false|never)\b", re.I)
# Sentences that name a claim beside a verdict word without reporting a result: each phrase, and why.
ALLOWED_VERDICT = {
    "read inconclusive, saying": "a rule of the code: a margin that a pilot sized on another dataset is not "
                                 "applied (tests/test_data_setting.py), whatever the run gives",
}


def _prose(text: str) -> list[tuple[int, str]]:
    """(first line, paragraph) for each paragraph or list item of `prose_lines`, its lines joined."""
    out, cur = [], []
    for i, line in prose_lines(text):
        starts = line is not None and (line.lstrip()[:2] in ("- ", "| ", "# ") or line.lstrip()[:3] == "1. ")
        if line is None or not line.strip() or starts:
            if cur:
                out.append(cur)
            cur = [(i, line)] if starts else []
            continue
        cur.append((i, line))
    if cur:
        out.append(cur)
    return [(par[0][0], " ".join(line.strip() for _, line in par)) for par in out]


def hand_typed_verdicts(text: str) -> list[tuple[int, str]]:
    """(line, sentence) for each sentence outside generated blocks that names a claim id beside a
    verdict word: a verdict typed by hand (a quoted verdict in a sentence that says what could be read
    is a word of the rule: MODAL)."""
    out = []
    for i, par in _prose(text):
        for phrase in ALLOWED_VERDICT:
            par = par.replace(phrase, "")
        for sent in re.split(r"(?<=[.;])\s", par):
            bare = re.sub(r'"[^"]*"', "", sent) if MODAL.search(sent) else sent
            if CLAIM.search(bare) and VERDICT.search(bare):
                out.append((i, sent))
    return out


def test_no_hand_typed_verdicts_outside_generated_blocks():
    print("\nAllowed verdict phrases:", *(f"  {k!r}: {v}" for k, v in ALLOWED_VERDICT.items()), sep="\n")
    found = {str(p.relative_to(ROOT)): hand_typed_verdicts(p.read_text()) for p in documents_scanned()}
    found = {k: v for k, v in found.items() if v}
    assert not found, ("a claim's verdict typed by hand (generate it from a snapshot, or move dated readings "
                       "to docs/measurements/):\n" + "\n".join(f"{k}:{i}: {h}" for k, v in found.items()
                                                                 for i, h in v))
    texts = [p.read_text() for p in documents_scanned()]
    assert [k for k in ALLOWED_VERDICT if not any(k in t.replace("\n", " ") for t in texts)] == []


@pytest.mark.parametrize("text, hits", [
    ("- **Cold posterior.** CPE-4 turns not replicated\n  at rung 1 (data size).", 1),
    ("LL-1 first read replicated at rung 1; LL-2 stays inconclusive.", 2),
    ('A falsifier must be able to read "not replicated" (CPE-2).', 0),
    ('CPE-4 reads "not replicated" at rung 1.', 1),
    ("Replicated at every rung: DT-2.", 1),
    ("  ```\n  DT-1 replicated\n  ```", 0),
    ("<!-- generated:x -->\n| CL-2 | not replicated |\n<!-- /generated:x -->", 0),
    ("```\nDT-1 replicated\n```", 0),
])
def test_the_verdict_scan_finds_typed_verdicts_and_spares_rule_words(text, hits):
    assert len(hand_typed_verdicts(text)) == hits


# ---------------------------------------------------------------- config comments


def comment_blocks(text: str) -> list[tuple[int, int]]:
    """(first line, number of comment lines) of each block of comment-only lines; blank lines
    between comment lines do not end a block."""
    out, start, n = [], 0, 0
    for i, line in enumerate([*text.splitlines(), "end"], 1):
        if line.lstrip().startswith("#"):
            start, n = (i, 1) if n == 0 else (start, n + 1)
        elif not line.strip() and n:
            continue
        elif n:
            out.append((start, n))
            n = 0
    return out


def test_config_comments_say_what_a_key_is_in_three_lines_at_most():
    """A config says what a key is; why it is so and what it produced live in the docs."""
    files = [*sorted((ROOT / "config").glob("*.yaml")), *sorted((ROOT / "config/papers").glob("*.yaml"))]
    long = {str(p.relative_to(ROOT)): [b for b in comment_blocks(p.read_text()) if b[1] > 3] for p in files}
    long = {k: v for k, v in long.items() if v}
    assert not long, f"comment blocks over 3 lines (first line, length): {long}"


def test_the_fragile_block_lists_the_rows_below_the_line():
    """A row's own stability (drawn jointly, replikit.scoring.claims.row_stability) decides; a snapshot
    written before rows had one falls back on its least stable part."""
    from replikit.reporting.docs import block_fragile

    part = {"verdict": "replicated", "mean": 0.1}
    snap = {"papers": {"p": {"P-1": {"verdict": "replicated", "measured": True, "kind": "paper",
                                     "stability": 0.55, "parts": {"a": {**part, "stability": 0.95}}},
                             "P-2": {"verdict": "inconclusive", "measured": False, "kind": "paper",
                                     "stability": None, "parts": {}}}}}
    text = block_fragile({"scorecard-smoke": snap})
    assert "| smoke | P-1 | replicated | paper | 0.55 |" in text and "P-2" not in text
    snap["papers"]["p"]["P-1"]["stability"] = 0.9
    assert block_fragile({"scorecard-smoke": snap}) == "No row of the smoke scale is fragile."
    del snap["papers"]["p"]["P-1"]["stability"]
    snap["papers"]["p"]["P-1"]["parts"]["a"]["stability"] = 0.6
    assert "| smoke | P-1 | replicated | paper | 0.60 |" in block_fragile({"scorecard-smoke": snap})
    snap["papers"]["p"]["P-1"]["parts"]["a"]["stability"] = None
    assert "holds no stability yet" in block_fragile({"scorecard-smoke": snap})


def test_the_readme_cell_marks_a_fragile_row():
    """A row with a part whose chance of the same verdict at 5 fresh seeds is under the fragile line is
    marked in the README's per-paper cell, beside its kind; a steady row is not."""
    def row(stability: float) -> dict:
        return {"verdict": "replicated", "measured": True, "kind": "paper",
                "parts": {"a": {"verdict": "replicated", "mean": 0.1, "stability": stability}}}

    snap = {"made_by": {"commit": "abc", "code": {}, "how": "x"},
            "papers": {"x": {"T-1": row(0.43), "T-2": row(0.99)}}}
    assert "| x | replicated T-1 (fragile), T-2 |" in docs.block_verdict_summary({"scorecard-smoke": snap})


def test_an_equivalences_two_bounds_say_their_mean_once():
    """The two bounds of an equivalence judge one statistic: the table says its mean once. Parts of
    other statistics keep their own entries, even with the same mean (three tasks at 0, say)."""
    parts = {"a > -0.015": {"mean": 0.1}, "a < 0.015": {"mean": 0.1}, "b": {"mean": -0.2},
             "sudoku: x": {"mean": 0.0}, "maze: x": {"mean": 0.0}, "c > -0.05": {"mean": 0.0}}
    assert docs._means(parts) == ["+0.100 (both bounds)", "-0.200", "+0.000", "+0.000", "+0.000"]
