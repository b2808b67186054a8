"""The paper claims that have neither a falsifier nor a check yet, each with what its falsifier
needs (runs that no scale trains, or a measurement not built): "paper/claim id" -> that need.

A replication must be able to fail (docs/report-and-scorecard.md): every paper claim gets a falsifier,
the same statistic where the effect should vanish (replikit.scoring.claims.Falsifier), or, if it holds
by construction, `check=`. Until then its row reads "no falsifier" and is not counted as a
replication. tests/test_falsifiers.py keeps this list exact (it may only shrink); docs/verdicts.md
prints it."""

FALSIFIER_GAPS: dict[str, str] = {
    "cold_posterior/CPE-7": "prior-only against likelihood-only tempering without augmentation, where the "
                            "paper finds no cold posterior effect: two conditions no scale trains "
                            "(about 80 CPU-s at smoke)",
    "latent_lookahead/LL-1": "a contrast the paper draws where lookahead should not help; lookahead at "
                             "tau 0 is next-token prediction by construction, so it is no falsifier",
    "latent_lookahead/LL-2": "as LL-1",
    "latent_lookahead/LL-3": "as LL-1, on 9x9 Sudoku, mazes and ProsQA",
    "latent_lookahead/LL-6": "as LL-3",
    "rank_collapse/RC-3": "a network that does not collapse at alpha = 1 (its difference is 0 at L = 1 by "
                          "construction): e.g. an init stack without attention, not built",
    "rank_collapse/RC-5": "the same training pair at a depth where alpha = 1 does not collapse (depth 2): "
                          "two runs per seed no scale trains (about 80 CPU-s at smoke)",
}
