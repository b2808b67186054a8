"""Claims scorecard: each paper declares claims; verdicts come from the numbers only.

A claim has one or more parts. Each part is a statistic per seed (e.g. a paired difference
between two conditions of the same seed) and a threshold with a direction. Two verdicts:

- *direction* (`verdict`): `replicated` when the part's Student-t interval over seeds lies wholly
  beyond its threshold and an exact sign-flip test agrees, both one-sided at (1 - level) / 2
  (see `replikit.scoring.stats`); `not replicated` when both say the opposite side; `inconclusive`
  otherwise. Under no effect, with the statistic's null symmetric about the threshold (a paired
  difference of interchangeable arms), the rule says "replicated" at most (1 - level) / 2 of the
  time (tests/test_calibration.py); a lopsided null, or seeds correlated by a choice made on the
  other seeds, can exceed it (docs/report-and-scorecard.md, "Where the rule exceeds its level").
  A part whose every seed gives exactly its threshold carries no evidence (`no_evidence`). A claim
  is replicated when all its parts are, not replicated when any part is not, inconclusive otherwise.
- *magnitude*: where the paper states a number for the statistic, whether our interval contains it
  (`consistent`), lies wholly below it (`smaller`) or above it (`larger`); `no paper number` else.

Each claim also gets a *fidelity* label with the deviations of this run's settings from
`config/paper.yaml` that concern it, plus the departures `config/paper.yaml` itself makes from the
paper (declared by the paper, with reasons; replikit.scoring.fidelity): `faithful`, `proxy` (any deviation
or departure, and every claim of a scale whose settings depart from the paper block anywhere),
`unverified` (no deviation, but settings that were never checked against the paper text, or a paper
that has not declared its departures) or `preflight` (the budget-cut pipeline check, inconclusive by
design). Magnitude is compared only where fidelity is `faithful`; elsewhere the paper's number is
"not comparable".

Every claim carries its `source`: the paper's sentence it tests, verbatim, and where it stands. Its
`kind` is `paper` when that sentence states the claim in the same direction, `hypothesis` when the
claim is our reading beyond the text: hypotheses are judged by the same rule but reported apart,
never counted as replications of a paper.

A run or metric a claim needs but cannot find is a bug (`MissingResult`), unless the claim
declares itself not measurable for the configuration at hand.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from dataclasses import asdict, dataclass, field

import numpy as np

from replikit.data.datasets import data_label
from replikit.scoring.fidelity import claim_deviations, deviations
from replikit.scoring.stability import (
    CODES,
    DRAWS,
    FRESH_SEEDS,
    MIN_JOINT_SEEDS,
    PRIOR_SCALE,
    fragile,
    joint_predictive,
    row_outcomes,
    stability,
    verdict_codes,
)
from replikit.scoring.stats import min_seeds_for, sign_flip_pvalue, t_interval

VERDICTS = ("replicated", "not replicated", "inconclusive")
MAGNITUDES = ("consistent", "smaller", "larger", "inconclusive", "no paper number")  # + not_comparable(...)
KINDS = ("paper", "hypothesis")
FIDELITIES = ("faithful", "unverified", "proxy", "preflight")
PREFLIGHT = "preflight"  # the scale whose rows are a pipeline check, inconclusive by design


class MissingResult(KeyError):
    """A claim needs a run, condition or metric that the results do not have."""

    def __str__(self) -> str:
        return str(self.args[0])


@dataclass
class Part:
    """One measured statistic of a claim."""

    label: str
    per_seed: dict[int, float]
    threshold: float
    direction: str = "above"  # "above": must exceed the threshold; "below": must stay under it
    paper_value: float | None = None  # the paper's number for this statistic, where it states one
    mean: float = float("nan")
    ci_low: float = float("nan")
    ci_high: float = float("nan")
    p_value: float = float("nan")  # exact sign-flip p-value against the threshold, claimed side
    verdict: str = "inconclusive"
    magnitude: str = "no paper number"
    no_evidence: str = ""  # why the measurement carries no evidence (e.g. both arms at a floor)
    caveat: str = ""  # a fact the verdict does not use and a reader must see (e.g. some seeds never learned)
    n_seeds: int = 0  # seeds with this statistic
    n_agree: int = 0  # seeds strictly on the claimed side of the threshold
    all_equal: bool = False  # every seed gives the same value: a zero-width interval, no spread to judge
    # the probability that 5 fresh seeds give the same verdict (replikit.scoring.stability); None: not known
    stability: float | None = None

    def evidence(self) -> str:
        """The row's evidence beside its interval: how many seeds agree with the claimed side, the
        sign-flip p-value, and, where every seed is equal, that the bracket is not an interval."""
        if not self.n_seeds:
            return "no seeds"
        side = "above" if self.direction == "above" else "below"
        text = (f"{self.n_agree}/{self.n_seeds} seeds {side} {self.threshold:g}, "
                f"sign-flip p = {self.p_value:.3g}")
        if self.all_equal:
            text += ("; every seed gives the same value, so the bracket has zero width and is not a "
                     "confidence interval: the verdict rests on the sign-flip test alone")
        if self.stability is not None:
            text += (f"; the same verdict at 5 fresh seeds: {self.stability:.2f}"
                     + (" (fragile)" if fragile(self.stability) else ""))
        return text

    def decide(self, level: float, min_seeds: int) -> Part:
        if self.direction not in ("above", "below"):
            raise ValueError(f"{self.label}: direction must be 'above' or 'below', not {self.direction!r}")
        values = [float(self.per_seed[s]) for s in sorted(self.per_seed)]
        if not values and self.no_evidence:
            self.verdict, self.magnitude = "inconclusive", "inconclusive"
            return self
        if not values:
            raise MissingResult(f"{self.label}: no seed has this statistic")
        self.mean, self.ci_low, self.ci_high = t_interval(values, level)
        self.n_seeds = len(values)
        self.n_agree = sum(v > self.threshold if self.direction == "above" else v < self.threshold
                           for v in values)
        self.all_equal = len(values) > 1 and max(values) == min(values)
        if max(values) == min(values) == self.threshold and not self.no_evidence:
            self.no_evidence = (f"{self.label}: every seed gives exactly the threshold "
                                f"{self.threshold:g}, so the statistic can fall on neither side of it, as "
                                "when its two arms coincide")
        alpha = (1 - level) / 2
        claimed, other = ("greater", "less") if self.direction == "above" else ("less", "greater")
        self.p_value = sign_flip_pvalue(values, self.threshold, claimed)
        beyond = self.ci_low > self.threshold if self.direction == "above" else self.ci_high < self.threshold
        short = self.ci_high < self.threshold if self.direction == "above" else self.ci_low > self.threshold
        if len(values) < max(min_seeds, min_seeds_for(level)) or self.no_evidence:
            self.verdict = "inconclusive"
        elif beyond and self.p_value <= alpha:
            self.verdict = "replicated"
        elif short and sign_flip_pvalue(values, self.threshold, other) <= alpha:
            self.verdict = "not replicated"
        else:
            self.verdict = "inconclusive"
        self.magnitude = self._magnitude(len(values))
        return self

    def judge_stability(self, level: float, min_seeds: int) -> Part:
        """Set `stability` (replikit.scoring.stability) for a part judged on enough seeds."""
        if self.n_seeds >= max(min_seeds, min_seeds_for(level)) and not self.no_evidence:
            values = [float(self.per_seed[s]) for s in sorted(self.per_seed)]
            self.stability = stability(values, self.verdict, self.threshold, self.direction, level, min_seeds)
        return self

    def _magnitude(self, n: int) -> str:
        if self.paper_value is None:
            return "no paper number"
        if n < 2:
            return "inconclusive"
        if self.ci_low > self.paper_value:
            return "larger"
        if self.ci_high < self.paper_value:
            return "smaller"
        return "consistent"


def difference(label: str, a: dict[int, float], b: dict[int, float], threshold: float = 0.0,
               floor: float | None = None, direction: str = "above",
               paper_value: float | None = None, method: str | None = None) -> Part:
    """A part measuring a[seed] - b[seed]. With `floor`, when every seed of both arms is at or
    below it (e.g. 0 exact match: neither condition learned the task) the difference carries no
    evidence either way, and the part is inconclusive with that reason rather than judged. When
    only arm `a` (the method the claim says is better, named `method`) sits at the floor in every
    seed, the method did not learn at this scale: a finding about the setting, not evidence against
    the claim, so the part is inconclusive and says so. When it sits at the floor in some seeds but
    not all, the verdict is judged as usual and the part carries a caveat naming those seeds: a verdict
    against the method there rests in part on seeds in which it did not learn."""
    common = sorted(set(a) & set(b))
    part = Part(label, {s: a[s] - b[s] for s in common}, threshold, direction, paper_value)
    stuck = [s for s in common if a[s] <= floor] if floor is not None and method else []
    if floor is not None and common and all(max(a[s], b[s]) <= floor for s in common):
        part.no_evidence = f"{label}: both arms at or below the floor {floor} in every seed"
    elif stuck and len(stuck) == len(common):
        part.no_evidence = (f"{label}: {method} did not learn at this scale (at or below {floor} in every "
                            "seed)")
    elif stuck:
        part.caveat = (f"{label}: {method} did not learn in {len(stuck)} of {len(common)} seeds, at or "
                       f"below {floor:g} in seed{'s' * (len(stuck) > 1)} {', '.join(map(str, stuck))}")
    return part


def cross_fitted(part: Part) -> Part:
    """A part whose statistic rests on a choice made on the other seeds (aggregate.cross_fit_choice):
    with a single seed there is nothing to choose on, so it carries no evidence."""
    if not part.per_seed:
        part.no_evidence = f"{part.label}: the choice is made on the other seeds, and there is only one"
    return part


@dataclass(frozen=True)
class Source:
    """The sentence a claim tests, verbatim, and where it stands.

    `quote` must appear word for word in the paper's source text (`Paper.sources`, by default the
    project's `sources/<paper>.txt`, abstracts copied from `../shared/papers/`), which the claims job
    checks before it judges (replikit.scoring.quotes); `where` names the paper and the part of it the
    sentence stands in. `abstract_only`: the paper's full text was not available, so the
    claim rests on the abstract alone. `background`: why the sentence is not the paper's own finding
    (it reports earlier work, or defines the effect the paper studies); such rows are counted apart."""

    quote: str
    where: str  # e.g. "Noci et al., NeurIPS 2021 (arXiv 2106.06596), abstract"
    abstract_only: bool = True
    background: str = ""  # e.g. "the sentence reports earlier work (Dong et al., 2021)"


@dataclass(frozen=True)
class Falsifier:
    """The same measurement in a setting where the paper, or the theory it rests on, says the effect
    is absent or reversed. The claim's own statistic, measured there and judged by the same rule,
    must be able to read "not replicated": a claim whose falsifier also reads "replicated" cannot
    discriminate, and is not counted as a replication.

    `setting`: what differs from the claim's own setting, e.g. "NTK instead of muP"; `why`: why the
    effect should vanish there, from the paper; `measure`: results -> the parts, one per claim part,
    read from runs the pipeline trains wherever the claim is measured; `not_measurable`:
    config -> why its runs are not trained in this configuration ("" where they are), as for a
    claim: its verdict is then "not measured", and the claim does not count as a replication.
    `origin` (ORIGINS): "paper's contrast" where the paper itself draws the contrast (it reports or
    predicts that the effect vanishes there), "our construction" where we chose the setting, "outcome
    known before" where its outcome was seen or expected before the verdict runs; only the first
    makes a counted replication.
    `sized_by_pilot`: where the claim's margin was sized from the pilot's value (its median over
    seeds) of the very statistic this falsifier reads, at its settings (say how): its "not
    replicated" was then expected by construction, so it shows no more than that the pilot's
    contrast held again, and a measured claim is counted apart (SIZED_BY_PILOT), not as a
    replication."""

    setting: str
    why: str
    measure: Callable[[dict], list[Part]] = field(repr=False)
    not_measurable: Callable[[dict], str] | None = field(default=None, repr=False)
    sized_by_pilot: str = ""
    origin: str = "paper's contrast"  # where the setting comes from: one of ORIGINS

    def __post_init__(self) -> None:
        if self.origin not in ORIGINS:
            raise ValueError(f"falsifier {self.setting!r}: origin must be one of {ORIGINS}, "
                             f"not {self.origin!r}")


# Where a falsifier's setting comes from. Only the paper's own contrast makes a counted replication: a
# setting of our construction may vanish for reasons of ours, and one whose outcome was known before
# the verdict runs tests nothing; their rows are counted apart, each under its own standing.
PAPERS_CONTRAST = "paper's contrast"
ORIGINS = (PAPERS_CONTRAST, "our construction", "outcome known before")
ORIGIN_STANDINGS = {"our construction": "falsifier of our construction",
                    "outcome known before": "falsifier outcome known before"}


# What a `paper` row counts as (the report and the docs count each apart):
#   replication          it has a falsifier, which does not also read "replicated";
#   cannot discriminate  a replicated claim whose falsifier, or a part of it, reads "replicated" too
#                        (a part that is the complementary bound of a two-sided claim excepted, while
#                        the other bound tells: `discrimination`);
#   falsifier inconclusive  a replicated claim whose falsifier neither reads "not replicated" nor differs
#                        from it significantly on the same seeds (the paired contrast: `discrimination`);
#   check                it holds by construction (Claim.check says why): an implementation check;
#   falsifier not measured  measured, but its falsifier gives no evidence: its runs are not trained
#                        in this configuration (e.g. a ladder's rung), or none of its parts carries
#                        evidence (`falsifier_measured`). A paper claim with neither a falsifier nor a
#                        check is refused (tools/paper_check, tests/test_falsifiers.py).
#   falsifier fixed by its pilot  its falsifier reads the statistic whose pilot value sized the margin
#                        (Falsifier.sized_by_pilot), so that falsifier's "not replicated" was expected;
#   falsifier of our construction, falsifier outcome known before  a measured claim whose falsifier's
#                        setting is not the paper's own contrast (Falsifier.origin: ORIGIN_STANDINGS);
#   known from its pilot  a measured claim whose pilot ran at its verdict settings (Claim.known_from_pilot):
#                        its outcome was seen before its verdict seeds ran, so they confirm, not test;
#   seen seeds only      a replication judged only on seeds seen before its margin, statistic or
#                        settings were fixed, with no fresh seeds at that scale (config key
#                        <paper>.seen_seeds; replikit.scoring.seed_sets.seen_only);
#   hypothesis           (not a paper claim) our reading beyond the sentence.
SIZED_BY_PILOT = "falsifier fixed by its pilot"
FALSIFIER_INCONCLUSIVE = "falsifier inconclusive"
KNOWN_FROM_PILOT = "known from its pilot"
STANDINGS = ("replication", "cannot discriminate", FALSIFIER_INCONCLUSIVE, "check", "falsifier not measured",
             SIZED_BY_PILOT, KNOWN_FROM_PILOT, *ORIGIN_STANDINGS.values(), "seen seeds only",
             "changed after its seeds were seen", "hypothesis")  # the last but one: scoring.registration


@dataclass(frozen=True)
class Claim:
    """A paper claim and how it is measured. `measure` maps aggregated results to parts.

    `source`: the sentence it tests; `kind`: "paper" when that sentence states the claim in the
    same direction, "hypothesis" when the claim is our reading beyond it (`reading` says which part
    is ours). `uses`: the config keys of the experiments this claim reads (deviations of other
    experiments' keys do not make it a proxy). `not_measurable(cfg)` returns why the configuration
    cannot test the claim (e.g. the task is not run at this scale), or "" when it can. `caveat`: a
    known confound of the operationalization, printed beside the verdict. `figures`: the names of the
    paper's figures that draw this claim's evidence (the report links the claim and its figures both
    ways; papers.interface.declaration_errors checks the names).
    """

    id: str
    statement: str
    paper_value: str
    paper_source: str
    statistic: str
    rule: str
    measure: Callable[[dict], list[Part]] = field(repr=False)
    source: Source | None = None
    kind: str = "paper"
    reading: str = ""
    uses: tuple[str, ...] = ()
    not_measurable: Callable[[dict], str] | None = field(default=None, repr=False)
    caveat: str = ""
    figures: tuple[str, ...] = ()
    # where the threshold or margin the verdict rests on is drawn: (figure, axis) pairs, e.g.
    # (("optimum_vs_depth", "y"),); that figure draws it with reporting.plotting.claim_line/claim_band,
    # keyed with the claim id (tests/test_figure_audit.py checks both sides)
    drawn: tuple[tuple[str, str], ...] = ()
    # the same statistic where the effect should vanish (Falsifier), or, for a row that holds by
    # construction, why no setting could flip it (`check`): one of the two for every paper claim
    falsifier: Falsifier | None = None
    check: str = ""
    # where a pilot ran at the verdict's own settings (which pilot, what it saw): the outcome was known
    # before the verdict seeds ran, so a measured row is counted apart (KNOWN_FROM_PILOT)
    known_from_pilot: str = ""

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"claim {self.id}: kind must be one of {KINDS}, not {self.kind!r}")
        if self.source is None or not self.source.quote.strip():
            raise ValueError(f"claim {self.id}: every claim quotes the sentence it tests "
                             "(source=Source(...))")
        if self.kind == "hypothesis" and not self.reading:
            raise ValueError(f"claim {self.id}: a hypothesis says what in it is our reading (reading=...)")
        if self.falsifier is not None and self.check:
            raise ValueError(f"claim {self.id}: a check holds by construction, so it has no falsifier; "
                             "give it one or the other")


def _json_ready(part: dict) -> dict:
    """Undefined numbers (no interval from one seed, no statistic at all) as None, not NaN."""
    return {k: None if isinstance(v, float) and v != v else v for k, v in part.items()}


def combine(verdicts: list[str]) -> str:
    if verdicts and all(v == "replicated" for v in verdicts):
        return "replicated"
    if any(v == "not replicated" for v in verdicts):
        return "not replicated"
    return "inconclusive"


def combine_magnitudes(magnitudes: list[str]) -> str:
    """One magnitude for a claim: its parts' that have a paper number, `mixed` when they differ."""
    stated = sorted({m for m in magnitudes if m != "no paper number"})
    if not stated:
        return "no paper number"
    return stated[0] if len(stated) == 1 else "mixed (" + ", ".join(stated) + ")"


def not_comparable(fidelity: str) -> str:
    """The magnitude of a part whose paper number comes from settings other than ours."""
    return f"not comparable ({fidelity})"


def fidelity_label(devs: list[dict], unverified: list[str], preflight: bool) -> str:
    """`preflight` for the budget-cut check; else `proxy` with any deviation or departure; else
    `unverified` when a setting the claim uses was never checked against the paper; else `faithful`."""
    if preflight:
        return "preflight"
    return "proxy" if devs else "unverified" if unverified else "faithful"


def claim_fidelity(claim: Claim, experiment_keys: set[str], deviations: list[dict], unverified: list[str],
                   preflight: bool = False) -> tuple[str, list[dict], list[str]]:
    """A claim's fidelity label, the deviations that concern it and its unverified settings (those
    of shared keys and of the experiments it reads, not of other claims' experiments)."""
    devs = claim_deviations(deviations, experiment_keys, claim.uses)
    unchecked = [d["key"] for d in claim_deviations([{"key": k} for k in unverified], experiment_keys,
                                                    claim.uses)]
    return fidelity_label(devs, unchecked, preflight), devs, unchecked


_NONZERO = re.compile(r"(?<![\w.])(?:0*[1-9]\d*(?:\.\d+)?|0?\.\d*[1-9]\d*)")  # "0.9", "2", "0.62"; not "0"


def rests_on_a_threshold(claim: Claim) -> bool:
    """Whether a claim's verdict rests on a numeric threshold or margin rather than the 0 of a paired
    difference, as its rule says: a margin or an equivalence ("within +-0.16 decades", "CI below the
    margin") or a number other than 0 ("lower CI bound > 0.9", "reaches 0.62 held-out accuracy")."""
    rule = claim.rule.lower()
    return any(w in rule for w in ("margin", "equivalence", "+-", "±")) or bool(_NONZERO.search(rule))


def evaluate(claims: list[Claim], results: dict, level: float = 0.90, min_seeds: int = 5,
             cfg: dict | None = None, deviations: list[dict] | None = None,
             unverified: list[str] | None = None, preflight: bool = False,
             scale_deviations: list[dict] | None = None, with_stability: bool = False,
             with_falsifiers: bool = True) -> list[dict]:
    """Measure and judge every claim. `cfg` is the paper's config (for `not_measurable`);
    `deviations` are this run's deviations from the paper's settings and the departures the paper
    settings themselves make (replikit.scoring.fidelity); `unverified` the settings never checked against
    the paper text; `preflight` marks the budget-cut pipeline check (every row inconclusive);
    `scale_deviations`: every way this scale's block departs from the paper block, of which any one
    keeps every claim from reading `faithful`; `with_stability`: give each part its stability (the
    claims job does; the null simulations, which judge thousands of draws, do not need it);
    `with_falsifiers`: judge each claim's falsifier too (the null simulations, which read only the
    claims' own verdicts, leave it out: `falsifier` and `standing` are then None)."""
    experiment_keys = {k for c in claims for k in c.uses}
    rows = []
    for claim in claims:
        reason = claim.not_measurable(cfg or {}) if claim.not_measurable else ""
        if reason:
            parts, note = [], f"not measurable at this scale: {reason}"
        else:
            try:
                parts = [p.decide(level, min_seeds) for p in claim.measure(results)]
                if with_stability:
                    parts = [p.judge_stability(level, min_seeds) for p in parts]
            except KeyError as e:  # a run, condition or metric the claim needs is missing: a bug
                raise MissingResult(f"claim {claim.id}: missing {e} in the results. Every run and "
                                    "metric a claim reads must exist; declare `not_measurable` for "
                                    "configurations that do not run it.") from e
            note = ""
        n_seeds = min((len(p.per_seed) for p in parts), default=0)
        needed = max(min_seeds, min_seeds_for(level))
        notes = [note] * bool(note) + [p.no_evidence or p.caveat for p in parts if p.no_evidence or p.caveat]
        if parts and n_seeds < needed:
            notes.append(f"{n_seeds} seed(s): at least {needed} are needed for a verdict at "
                         f"one-sided level {(1 - level) / 2:g}")
        fidelity, devs, unchecked = claim_fidelity(claim, experiment_keys, deviations or [], unverified or [],
                                                   preflight)
        if fidelity == "faithful" and scale_deviations:  # never faithful where this scale departs anywhere
            fidelity, devs = "proxy", list(scale_deviations)
        if fidelity != "faithful":  # a number from another setting says nothing about this one's size
            for p in parts:
                if p.paper_value is not None and p.magnitude != "inconclusive":
                    p.magnitude = not_comparable(fidelity)
        if preflight:
            for p in parts:
                p.verdict = "inconclusive"
            notes.insert(0, "preflight: the papers' settings with budgets cut, to check the pipeline; "
                            "inconclusive by design")
        falsified, falsifier_parts = _falsifier_row(claim, results, cfg or {}, level, min_seeds, parts,
                                                    preflight) if with_falsifiers else (None, [])
        joint = row_stability(parts, falsifier_parts if falsified else None, level, min_seeds) \
            if with_stability and not preflight else None
        row = {k: v for k, v in asdict(claim).items() if k not in ("measure", "not_measurable", "falsifier")}
        row.update(
            verdict=combine([p.verdict for p in parts]) if parts else "inconclusive",
            magnitude=combine_magnitudes([p.magnitude for p in parts]) if parts else "not measured",
            fidelity=fidelity, deviations=devs, unverified=unchecked,
            measurable=not reason, n_seeds=n_seeds, ci_level=level, note="; ".join(notes),
            stability=joint, fragile=fragile(joint),
            parts=[_json_ready({**asdict(p), "evidence": p.evidence()}) for p in parts],
            falsifier=falsified,
        )
        row["standing"] = standing(row) if with_falsifiers else None
        rows.append(row)
    return rows


def _falsifier_row(claim: Claim, results: dict, cfg: dict, level: float, min_seeds: int,
                   claim_parts: list[Part], preflight: bool) -> tuple[dict | None, list[Part]]:
    """The falsifier's setting, its parts judged by the claim's rule and their combined verdict
    ("not measured" where the claim itself is not measured here, or where the falsifier's own runs
    are not trained, and then `note` says why; inconclusive at the preflight), and whether it tells
    the claim's setting from its own (`discrimination`); with its judged parts."""
    f = claim.falsifier
    if f is None:
        return None, []
    measured = bool(claim_parts)
    row = {"setting": f.setting, "why": f.why, "verdict": "not measured", "parts": []}
    if f.sized_by_pilot:
        row["sized_by_pilot"] = f.sized_by_pilot
    row["origin"] = f.origin
    reason = f.not_measurable(cfg) if f.not_measurable else ""
    if reason:
        row["note"] = f"not measurable in this configuration: {reason}"
    if not measured or reason:
        return row, []
    try:
        parts = [p.decide(level, min_seeds) for p in f.measure(results)]
        for p in parts if preflight else ():
            p.verdict = "inconclusive"
    except KeyError as e:
        raise MissingResult(f"claim {claim.id}: its falsifier ({f.setting}) reads {e}, missing from the "
                            "results: every run a falsifier reads must be trained wherever the claim is "
                            "measured, or the falsifier declares `not_measurable` for configurations "
                            "that do not train it") from e
    # only the parts that carry evidence: a part that can read neither side must not hide one that reads
    # "replicated" (the row would then count as a replication although its falsifier reads the effect)
    evident = [p.verdict for p in parts if not p.no_evidence]
    row.update(verdict=combine(evident) if evident else "inconclusive",
               parts=[_json_ready({**asdict(p), "evidence": p.evidence()}) for p in parts])
    row["discrimination"] = discrimination(claim_parts, parts, row["verdict"], level, min_seeds)
    return row, parts


def contrast(part: Part, falsified: Part, level: float, min_seeds: int) -> Part:
    """The paired contrast of a claim part with its falsifier's part: claim minus falsifier on the seeds
    both have, judged by the same rule against 0 in the claim part's direction (significant: the
    statistic differs between the two settings the way the claim says)."""
    seeds = sorted(set(part.per_seed) & set(falsified.per_seed))
    diff = Part(f"{part.label}, minus its falsifier",
                {s: part.per_seed[s] - falsified.per_seed[s] for s in seeds}, 0.0, part.direction)
    if not seeds or part.no_evidence or falsified.no_evidence:
        why = "no seed in common" if not seeds else "a side carries no evidence"
        diff.no_evidence = f"{diff.label}: {why}"
    return diff.decide(level, min_seeds)


def _bounds_of_one_statistic(a: Part, b: Part) -> bool:
    """Whether parts `a` and `b` are the two one-sided bounds of one two-sided claim: one statistic
    within a band, as the same per-seed values bounded above and below (the lower bound under the
    upper), or as a statistic and its negative bounded on one side."""
    if not a.per_seed or set(a.per_seed) != set(b.per_seed):
        return False
    if a.direction != b.direction and all(a.per_seed[s] == b.per_seed[s] for s in a.per_seed):
        low, high = (a, b) if a.direction == "above" else (b, a)
        return low.threshold <= high.threshold
    if a.direction == b.direction and all(a.per_seed[s] == -b.per_seed[s] for s in a.per_seed):
        return (-b.threshold <= a.threshold) if a.direction == "below" else (a.threshold <= -b.threshold)
    return False


def bound_groups(parts: list[Part]) -> list[list[int]]:
    """The parts' indices grouped by what a falsifier must break: the two bounds of a two-sided claim
    (`_bounds_of_one_statistic`) together, every other part alone."""
    groups: list[list[int]] = []
    for i, part in enumerate(parts):
        mate = next((g for g in groups if len(g) == 1 and _bounds_of_one_statistic(parts[g[0]], part)), None)
        if mate is not None:
            mate.append(i)
        else:
            groups.append([i])
    return groups


def discrimination(claim_parts: list[Part], parts: list[Part], verdict: str, level: float,
                   min_seeds: int) -> dict:
    """Whether a falsifier tells its claim's setting from its own (the claim's standing reads it).

    `fooled`: the falsifier's parts that read "replicated" as the claim would, each disqualifying the
    claim part it matches (by position, where the falsifier has a part per claim part, else its own
    parts); of a two-sided claim's two bounds (`bound_groups`), a bound that reads "replicated" is
    fooled only when the other does too, since the complementary bound holds wherever the effect is
    large. `contrast`: per claim part, the paired contrast (`contrast`), where the parts match.
    `tells`: "falsifier" when the falsifier reads "not replicated", else "contrast" when, for every
    group of parts, a part's paired contrast is significant; "" when neither: the row is not shown to
    tell the settings apart. An equivalence (a two-sided claim: a statistic within a margin) tells only
    by its falsifier: that the paper's contrast differs from the claim's setting on the same seeds
    does not show that the margin is narrow enough to see it, which only the falsifier breaking a
    bound does (issue 85)."""
    matched = len(claim_parts) == len(parts) and bool(parts)
    groups = bound_groups(claim_parts if matched else parts)
    fooled = [parts[i].label for g in groups if all(parts[i].verdict == "replicated" for i in g) for i in g]
    pairs = zip(claim_parts, parts, strict=True) if matched else ()
    contrasts = [contrast(c, f, level, min_seeds) for c, f in pairs]
    by_contrast = matched and all(len(g) == 1 and contrasts[g[0]].verdict == "replicated" for g in groups)
    tells = "falsifier" if verdict == "not replicated" else "contrast" if by_contrast else ""
    two_sided = [[parts[i].label for i in g] for g in groups if len(g) == 2]
    return {"fooled": fooled, "tells": tells, "two_sided": two_sided,
            "contrast": [_json_ready({**asdict(p), "evidence": p.evidence()}) for p in contrasts]}


def _statistics(parts: list[Part], seeds: list[int]
                ) -> tuple[list[np.ndarray], list[tuple[int, float] | None]]:
    """The distinct statistics among `parts` on `seeds` (a two-sided claim's bounds read one statistic,
    or it and its negative), and for each part (None for one without evidence): (statistic, sign)."""
    columns: list[np.ndarray] = []
    refs: list[tuple[int, float] | None] = []
    for p in parts:
        if p.no_evidence or not p.per_seed:
            refs.append(None)
            continue
        v = np.array([p.per_seed[s] for s in seeds], dtype=float)
        ref = next(((j, sign) for j, c in enumerate(columns) for sign in (1.0, -1.0)
                    if np.array_equal(c, sign * v)), None)
        if ref is None:
            columns.append(v)
            ref = (len(columns) - 1, 1.0)
        refs.append(ref)
    return columns, refs


def _nearest(thresholds: list[float], value: float) -> float:
    """The threshold nearest `value`: where a statistic's prior is centred (the selection to undo)."""
    return min(thresholds, key=lambda t: abs(t - value))


def row_stability(parts: list[Part], falsified: list[Part] | None, level: float, min_seeds: int,
                  n_fresh: int = FRESH_SEEDS, draws: int = DRAWS, seed: int = 0,
                  prior_scale: float = PRIOR_SCALE) -> float | None:
    """The probability that `n_fresh` fresh seeds leave the row where it stands: the same verdict and,
    for a replicated row with a falsifier, the same discrimination (`stability.row_outcomes`). Every
    part, the falsifier's and the paired contrasts are drawn jointly from the seeds they share
    (`stability.joint_predictive`, each statistic's mean shrunk toward its nearest threshold by the
    stated prior, PRIOR_SCALE); None without MIN_JOINT_SEEDS shared seeds or any spread."""
    falsified = falsified or []
    every = [*parts, *falsified]
    evident = [p for p in every if not p.no_evidence and p.per_seed]
    if not parts or not evident or n_fresh < min_seeds:
        return None
    seeds = sorted(set.intersection(*(set(p.per_seed) for p in evident)))
    if len(seeds) < MIN_JOINT_SEEDS:
        return None
    columns, refs = _statistics(every, seeds)
    values = np.column_stack(columns)
    if not (values.std(axis=0) > 0).any():
        return None
    bounds: list[list[float]] = [[] for _ in columns]
    for p, ref in zip(every, refs, strict=True):
        if ref is not None:
            bounds[ref[0]].append(ref[1] * p.threshold)
    centres = np.array([_nearest(b, float(c.mean())) for b, c in zip(bounds, columns, strict=True)])
    fresh = joint_predictive(values, centres, n_fresh, draws, np.random.default_rng(seed), prior_scale)

    def drawn(ref: tuple[int, float] | None) -> np.ndarray | None:
        return None if ref is None else ref[1] * fresh[:, :, ref[0]]

    def codes(x: np.ndarray | None, threshold: float, direction: str) -> np.ndarray:
        return np.zeros(draws, dtype=int) if x is None else verdict_codes(x, threshold, direction, level)

    k, matched = len(parts), bool(falsified) and len(parts) == len(falsified)
    every_codes = np.column_stack([codes(drawn(r), p.threshold, p.direction)
                                   for p, r in zip(every, refs, strict=True)])
    drawn_contrast, seen_contrast = None, None
    if matched:
        diffs = [None if refs[i] is None or refs[k + i] is None else drawn(refs[i]) - drawn(refs[k + i])
                 for i in range(k)]
        drawn_contrast = np.column_stack([codes(d, 0.0, c.direction)
                                          for d, c in zip(diffs, parts, strict=True)])
        seen_contrast = np.array([[CODES[contrast(c, f, level, min_seeds).verdict]
                                   for c, f in zip(parts, falsified, strict=True)]])
    groups = bound_groups(parts if matched else falsified) if falsified else []
    evident_f = [not f.no_evidence for f in falsified]
    seen = np.array([[CODES[p.verdict] for p in every]])
    f_of = (lambda a: a[:, k:]) if falsified else (lambda a: None)
    now = row_outcomes(every_codes[:, :k], f_of(every_codes), drawn_contrast, groups, evident_f)
    before = row_outcomes(seen[:, :k], f_of(seen), seen_contrast, groups, evident_f)[0]
    return float(np.mean(now == before))


def discrimination_standing(row: dict) -> str:
    """For a replicated paper claim with a measured falsifier: "cannot discriminate" when a falsifier
    part fools it (`discrimination`), FALSIFIER_INCONCLUSIVE when its falsifier neither reads "not
    replicated" nor differs from it significantly; "" else (and for every other row)."""
    falsifier = row.get("falsifier") or {}
    found = falsifier.get("discrimination")
    if row.get("verdict") != "replicated" or not falsifier:
        return ""
    if found is None:  # judged before discrimination was recorded: the two verdicts alone
        return "cannot discriminate" if falsifier.get("verdict") == "replicated" else ""
    if found["fooled"]:
        return "cannot discriminate"
    return "" if found["tells"] else FALSIFIER_INCONCLUSIVE


def standing(row: dict) -> str:
    """What a judged row counts as (STANDINGS): `hypothesis` for our reading; for a paper claim,
    `check` when it says it holds by construction, `cannot discriminate` or `falsifier inconclusive`
    when it reads "replicated" and its falsifier does not tell (`discrimination_standing`),
    `falsifier not measured` when the claim is measured and its falsifier
    gives no evidence (`falsifier_measured`; or it has none), KNOWN_FROM_PILOT when a pilot at its
    verdict settings showed the outcome (Claim.known_from_pilot), ORIGIN_STANDINGS when its
    falsifier's setting is not the paper's own contrast (Falsifier.origin), SIZED_BY_PILOT when the
    falsifier's outcome was expected from the pilot that sized the margin (Falsifier.sized_by_pilot),
    else `replication`."""
    if row["kind"] != "paper":
        return "hypothesis"
    if row.get("check"):
        return "check"
    falsifier = row.get("falsifier")
    if not falsifier or (row["parts"] and not falsifier_measured(falsifier)):
        return "falsifier not measured"
    told = discrimination_standing(row)
    if told:
        return told
    if row.get("known_from_pilot") and row["parts"]:
        return KNOWN_FROM_PILOT
    if falsifier.get("origin", PAPERS_CONTRAST) != PAPERS_CONTRAST and row["parts"]:
        return ORIGIN_STANDINGS[falsifier["origin"]]
    return SIZED_BY_PILOT if falsifier.get("sized_by_pilot") and row["parts"] else "replication"


def falsifier_measured(falsifier: dict) -> bool:
    """Whether a falsifier gave evidence: it was measured (its runs trained here) and at least one of
    its parts has a value and carries evidence (`Part.no_evidence` empty). A part whose every seed
    gives no value (e.g. an optimum at the end of its grid), or exactly its threshold (e.g. two arms
    that coincide), cannot read "not replicated", so a falsifier made only of such parts tests
    nothing."""
    return falsifier["verdict"] != "not measured" and any(
        p.get("mean") is not None and not p.get("no_evidence") for p in _part_list(falsifier["parts"]))


def _part_list(parts: list[dict] | dict) -> list[dict]:
    """A row's parts, as judged (a list) or as summarized by label (replikit.scoring.scorecard_reference)."""
    return list(parts.values()) if isinstance(parts, dict) else list(parts)


def falsifier_text(row: dict) -> str:
    """The row's two verdicts in one line, e.g. "replicated under the paper's setting; not
    replicated under its falsifier (NTK instead of muP)", with why the falsifier is not measured
    (its `note`) or carries no evidence (its parts' `no_evidence`) where it does not; "" for a row
    without a falsifier."""
    f = row.get("falsifier")
    if not f:
        return ""
    none = [p["no_evidence"].removeprefix(p["label"] + ": ") for p in _part_list(f["parts"])
            if isinstance(p.get("no_evidence"), str) and p["no_evidence"]]
    why = f.get("note") or "; ".join(dict.fromkeys(none))
    note = f" ({why})" if why and not falsifier_measured(f) else ""
    return (f"{row['verdict']} under the paper's setting; {f['verdict']}{note} under its falsifier "
            f"({f['setting']})") + told_text(row)


def told_text(row: dict) -> str:
    """How a replicated row's falsifier tells the settings apart, or why it does not (`discrimination`),
    as a clause to follow the verdicts; "" for another row, or one judged before it was recorded."""
    falsifier = row.get("falsifier") or {}
    found = falsifier.get("discrimination")
    if not found or row.get("verdict") != "replicated":
        return ""
    if found["fooled"]:
        return "; it cannot tell them apart: " + ", ".join(found["fooled"]) + " reads replicated too"
    parts = falsifier["parts"]
    verdicts = ({p["label"]: p["verdict"] for p in parts} if isinstance(parts, list)
                else {label: p["verdict"] for label, p in parts.items()})
    bounds = [g for g in found.get("two_sided", []) if "replicated" in [verdicts.get(label) for label in g]]
    both = ("; of a two-sided claim the complementary bound reads replicated, as it must where the effect "
            "is large, and the other bound tells") if bounds else ""
    if found["tells"] == "falsifier":
        return both
    means = ", ".join(f"{c['mean']:.4g}" for c in _part_list(found["contrast"]) if c.get("mean") is not None)
    if found["tells"] == "contrast":
        return f"{both}; told apart by the paired contrast, claim minus falsifier on the same seeds ({means})"
    return (f"{both}; not told apart: the falsifier does not read 'not replicated' and the paired contrast, "
            f"claim minus falsifier on the same seeds ({means or 'none'}), is not significant")


def judge(claims: list[Claim], results: dict, cfg: dict, stats: dict, paper: dict, seeds: list[int],
          subset: str = "", scale: str = "", shown: Callable[[dict], dict] | None = None) -> list[dict]:
    """`evaluate` with this run's settings (`cfg`, `seeds`, what the data is when it is a subset file:
    `replikit.data.datasets.data_label`, else ""; `shown`: a config block as its deviations name it,
    interface.Paper.shown_settings) compared with
    the paper's own (`paper`: {"cfg": its config section, "seeds": its seeds, and what the paper
    declares: "departures" of its own settings from the paper, "unverified" settings, "figure_only"
    settings that no statistic reads})."""
    view = shown or (lambda block: block)
    scale_devs = deviations(view(cfg), view(paper["cfg"]), list(seeds), paper["seeds"], subset,
                            paper.get("figure_only", ()))
    devs = scale_devs + [dict(d) for d in paper.get("departures", ())]
    return evaluate(claims, results, stats["ci_level"], stats["min_seeds"], cfg, devs,
                    list(paper.get("unverified", ())), preflight=scale == PREFLIGHT,
                    scale_deviations=scale_devs, with_stability=True)


# The version of the scorecard's format (`write_scorecard`): the report shows a scorecard that an
# earlier call left in the tree only when it has this format (reporting.report.earlier_sections). Raise
# it when the report reads a key that older scorecards lack.
SCORECARD_FORMAT = 1


def write_scorecard(path: str, paper: str, title: str, scale: str, manifest: dict | None,
                    seeds: list[int], rows: list[dict], provenance: dict, arxiv: str = "",
                    seed_sets: dict | None = None) -> dict:
    """Write `results/<paper>/claims.json` in the one format the report reads.

    `manifest` is the data manifest the claims rest on (its `subset` flag and source are
    shown on the scorecard); None for papers whose data is generated by the pipeline. `seed_sets`:
    the card's other seed sets beside `seeds` (`fresh_seeds`, `earlier_seeds`: their seeds and claims).
    """
    from replikit.core.io import write_json

    card = {
        "format": SCORECARD_FORMAT, "paper": paper, "title": title, "arxiv": arxiv, "scale": scale,
        "subset": bool(manifest and manifest.get("subset")),
        "data_label": data_label(manifest),  # e.g. "CIFAR-10 subset (7,728 training / 1,000 test images)"
        "data_source": manifest["source"] if manifest else "generated by the pipeline",
        "seeds": sorted(int(s) for s in seeds), "claims": rows, "provenance": provenance,
        **(seed_sets or {}),
    }
    write_json(path, card)
    for r in rows:
        print(r["id"], r["kind"], r["verdict"], r["magnitude"], r["fidelity"],
              [(p["label"], p["mean"] if p["mean"] is None else round(p["mean"], 4)) for p in r["parts"]])
    return card
