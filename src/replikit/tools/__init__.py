"""Command-line tools that nothing imports: the lent GPU's checks (`device_check`), the sampler
and start-up benchmarks, the config checker (`config_check`), and `publish` (the snapshots under
docs/published/ that the documents' numbers come from).

May import: anything in replikit (the top room)."""
