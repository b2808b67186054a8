"""Planning: the priced bill of a configuration (`bill`; `python -m replikit.plan CONFIG`), the
lookahead cost counter (`ll_cost`), the pilots that fix the margins (`pilot`), and the scale ladder
(`ladder`).

May import: every room below it, `papers` included (it prices and walks the papers' own settings)."""
