"""Command-line tools that nothing imports: the lent GPU's checks (`device_check`), the sampler
and start-up benchmarks, the config checker (`config_check`), `publish` (the snapshots under
docs/published/ that the documents' numbers come from) and `published_runs` (the runs behind them,
committed, and judged again from them).

May import: anything in replikit (the top room)."""
