"""replikit: a reproducible paper-replication pipeline (library behind the Snakemake rules)."""

__version__ = "0.1.0"
