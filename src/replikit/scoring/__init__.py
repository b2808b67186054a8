"""Scoring: the claim declarations and the verdict rule (`claims`), its statistics (`stats`), the
per-seed tables the claims read (`aggregate`), the fidelity labels and deviations (`fidelity`), and
the committed smoke scorecard that CI compares against (`scorecard_reference`), and rows judged on
seen and fresh seeds (`seed_sets`).

May import: `replikit.core`, `replikit.data`, `replikit.models`, `replikit.methods`."""
