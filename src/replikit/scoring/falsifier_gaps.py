"""The paper claims that have neither a falsifier nor a check yet, each with what its falsifier
needs (runs that no scale trains, or a measurement not built): "paper/claim id" -> that need.

A replication must be able to fail (docs/report-and-scorecard.md): every paper claim gets a falsifier,
the same statistic where the effect should vanish (replikit.scoring.claims.Falsifier), or, if it holds
by construction, `check=`. Until then its row reads "no falsifier" and is not counted as a
replication. tests/test_falsifiers.py keeps this list exact (it may only shrink); docs/verdicts.md
prints it."""

FALSIFIER_GAPS: dict[str, str] = {
    "latent_lookahead/LL-1": "a contrast the paper draws where lookahead should not help; lookahead at "
                             "tau 0 is next-token prediction by construction, so it is no falsifier; a task "
                             "where foresight is not essential (e.g. copying the prompt) puts both methods "
                             "at the ceiling, where a difference of 0 in every seed reads inconclusive, "
                             "never not replicated",
    "latent_lookahead/LL-2": "as LL-1",
    "latent_lookahead/LL-3": "as LL-1, on 9x9 Sudoku, mazes and ProsQA",
    "latent_lookahead/LL-6": "as LL-3",
    "rank_collapse/RC-3": "a network that does not collapse at alpha = 1. Not L = 1, where the two arms are "
                          "one network; not the shallowest init depth above 1, where alpha = 1 has already "
                          "collapsed at smoke (L = 4: the smoke run's similarity_vs_depth table); not an "
                          "init stack without attention, whose ReLU MLPs would also align tokens with "
                          "depth (our reading, not measured)",
}
