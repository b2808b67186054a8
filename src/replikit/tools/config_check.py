"""`python -m replikit.tools.config_check FILE [FILE ...]`: check config files merged in order, as `snakemake
--configfile A B` merges them, against the workflow's schema and every paper's constraints; a YAML
syntax error is named by line and column, which `snakemake --configfile` does not do.

A command line apart from `replikit.core.config`: it composes the configuration with the papers' checks
(`papers.registry.config_errors`), and the configuration library itself imports no paper."""

from __future__ import annotations

import sys

from replikit.core.config import ConfigError, read_yaml, validate_config
from replikit.papers import CONFIGS
from replikit.papers.registry import config_errors

ROOT = CONFIGS.parents[1]  # the workflow's folder (config/papers is under it), in any install


def main(argv: list[str]) -> int:
    """Check config files merged in order, as `snakemake --configfile A B` would merge them."""
    from snakemake.utils import update_config

    schema = ROOT / "workflow/schemas/config.schema.yaml"
    config: dict = {}
    try:
        for path in argv:
            update_config(config, read_yaml(path))
        validate_config(config, schema, config_errors)
    except ConfigError as e:
        print(e, file=sys.stderr)
        return 1
    print(f"{', '.join(argv)}: valid")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
