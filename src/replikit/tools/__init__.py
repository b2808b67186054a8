"""Command-line tools that nothing imports: the lent GPU's checks (`device_check`), the sampler
and start-up benchmarks, and the config checker (`config_check`).

May import: anything in replikit (the top room)."""
