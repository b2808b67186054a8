"""replikit: a reproducible paper-replication pipeline (library behind the Snakemake rules).

Importing it pins the numerics (replikit.core.numerics) before torch computes anything."""

from replikit.core.numerics import pin_environment

pin_environment()

__version__ = "0.1.0"
