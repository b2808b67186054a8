"""Configuration: JSON-schema validation that fills defaults and names the offending key, plus the
constraints between keys that a schema cannot express, all checked before any job starts.

`python -m replikit.config FILE [FILE ...]` checks config files (merged in order) by hand; it
names the line of a YAML syntax error, which `snakemake --configfile` does not.
"""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

import jsonschema
import yaml

# Training / test images of the full datasets (the CIFAR-10 subset has fewer; jobs check that).
FULL_SIZES = {"cifar10": (50000, 10000), "mnist": (60000, 10000)}
SPLIT_CIFAR10_TASKS = 5


class ConfigError(ValueError):
    """The configuration does not match the schema."""


def _with_defaults(validator_class):
    validate_props = validator_class.VALIDATORS["properties"]

    def set_defaults(validator, properties, instance, schema):
        if isinstance(instance, dict):
            for key, sub in properties.items():
                if "default" in sub and key not in instance:
                    instance[key] = _copy(sub["default"])
        yield from validate_props(validator, properties, instance, schema)

    return jsonschema.validators.extend(validator_class, {"properties": set_defaults})


def _copy(value: Any) -> Any:
    return yaml.safe_load(yaml.safe_dump(value))


def _key(error: jsonschema.ValidationError) -> str:
    path = [str(p) for p in error.absolute_path]
    if error.validator == "additionalProperties":
        extra = [k for k in error.instance if k not in error.schema.get("properties", {})]
        return ".".join(path + [", ".join(extra)])
    return ".".join(path) or "<top level>"


# ---------------------------------------------------------------- --config strings


def _resolve(schema: dict, root: dict) -> dict:
    while "$ref" in schema:
        schema = root["definitions"][schema["$ref"].split("/")[-1]]
    return schema


def _scalar_types(schema: dict, root: dict) -> set[str]:
    """JSON types a scalar may take under `schema` (its type, oneOf/anyOf branches, enum members)."""
    schema = _resolve(schema, root)
    types = schema.get("type", [])
    found = set([types] if isinstance(types, str) else types)
    for branch in schema.get("oneOf", []) + schema.get("anyOf", []):
        found |= _scalar_types(branch, root)
    for member in schema.get("enum", []) + ([schema["const"]] if "const" in schema else []):
        found.add({bool: "boolean", int: "integer", float: "number"}.get(type(member), "string"))
    return found


def _coerce_string(value: str, types: set[str]) -> Any:
    """`snakemake --config` hands list items and nested values over as strings: '11' -> 11."""
    if "string" in types:
        return value
    if "integer" in types and re.fullmatch(r"[+-]?\d+", value):
        return int(value)
    if "number" in types:
        try:
            return float(value)
        except ValueError:
            pass
    if "boolean" in types and value.lower() in ("true", "false"):
        return value.lower() == "true"
    if "null" in types and value in ("null", "~", "None"):
        return None
    return value


def coerce(value: Any, schema: dict, root: dict) -> Any:
    """`value` with strings that the schema wants as numbers, booleans or null converted."""
    schema = _resolve(schema, root)
    if isinstance(value, str):
        return _coerce_string(value, _scalar_types(schema, root))
    if isinstance(value, dict):
        for key, sub in schema.get("properties", {}).items():
            if key in value:
                value[key] = coerce(value[key], sub, root)
    elif isinstance(value, list) and isinstance(schema.get("items"), dict):
        value[:] = [coerce(v, schema["items"], root) for v in value]
    return value


# ---------------------------------------------------------------- constraints between keys


def _size_errors(key: str, n: int | None, dataset: str, split: str, limit: int | None = None) -> list[str]:
    train, test = FULL_SIZES[dataset]
    most = limit or (train if split == "train" else test)
    if n is None or n <= most:
        return []
    name = {"cifar10": "CIFAR-10", "mnist": "MNIST"}[dataset]
    what = f"{name} has only {most} {split}ing images" + (" per task" if limit else "")
    return [f"config key '{key}' is {n} but {what}; use at most {most} (or null for all)"]


def _benign_memorization_errors(c: dict) -> list[str]:
    return (_size_errors("benign_memorization.n_train", c["n_train"], c["dataset"], "train")
            + _size_errors("benign_memorization.probe_fit_size", c["probe_fit_size"], c["dataset"], "train"))


def _first_sample_epoch(c: dict) -> int:
    """The first epoch >= sample_start that is among the last samples_per_cycle of its cycle."""
    e = c["sample_start"]
    while (e - 1) % c["cycle_epochs"] < c["cycle_epochs"] - c["samples_per_cycle"]:
        e += 1
    return e


def _cold_posterior_errors(c: dict) -> list[str]:
    errors = (_size_errors("cold_posterior.n_train", c["n_train"], c["dataset"], "train")
              + _size_errors("cold_posterior.curated_size", c["curated_size"], c["dataset"], "train")
              + _size_errors("cold_posterior.n_test", c["n_test"], c["dataset"], "test"))
    if c["ramp_start"] > c["sample_start"]:
        errors.append(f"config key 'cold_posterior.ramp_start' ({c['ramp_start']}) is after "
                      f"'cold_posterior.sample_start' ({c['sample_start']}): the temperature ramps in "
                      "from ramp_start and samples are collected from sample_start; "
                      "use ramp_start <= sample_start")
    first = _first_sample_epoch(c)
    if c["epochs"] < first:
        errors.append(f"config key 'cold_posterior.epochs' ({c['epochs']}) ends the chains before the first "
                      f"posterior sample (epoch {first}: sample_start {c['sample_start']}, the last "
                      f"{c['samples_per_cycle']} epoch(s) of each {c['cycle_epochs']}-epoch cycle); "
                      f"use epochs >= {first} or lower ramp_start/sample_start")
    return errors


def _continual_learning_errors(c: dict) -> list[str]:
    from .papers import continual_learning as cl

    errors = (_size_errors("continual_learning.n_train", c["n_train"], "mnist", "train")
              + _size_errors("continual_learning.n_test", c["n_test"], "mnist", "test"))
    if c["stream"] == "split_cifar10":
        if c["n_tasks"] > SPLIT_CIFAR10_TASKS:
            errors.append(f"config key 'continual_learning.n_tasks' is {c['n_tasks']} but Split CIFAR-10 has "
                          f"{SPLIT_CIFAR10_TASKS} two-class tasks; use n_tasks <= {SPLIT_CIFAR10_TASKS}")
        train, test = (n // 5 for n in FULL_SIZES["cifar10"])  # two of ten classes per task
        errors += _size_errors("continual_learning.n_train", c["n_train"], "cifar10", "train", train)
        errors += _size_errors("continual_learning.n_test", c["n_test"], "cifar10", "test", test)
    fractions = [("continual_learning.similarity.permuted_fractions", p)
                 for p in c["similarity"]["permuted_fractions"]]
    if c["stream"] == "pmnist":
        fractions.append(("continual_learning.permuted_fraction", c["permuted_fraction"]))
    for key, p in fractions:
        used = cl.RunSpec("seq", cl.stream_name("pmnist", p), "ntp").permuted_fraction
        if used != p:
            errors.append(f"config key '{key}': {p} is not a whole percentage of the pixels (run names "
                          f"hold whole percents, so it would run as {used}); use e.g. {used}")
    gammas = [("continual_learning.gamma_sweep.gammas", g) for g in c["gamma_sweep"]["gammas"]]
    for key, g in gammas + [("continual_learning.width_sweep.gamma0", c["width_sweep"]["gamma0"])]:
        text = f"{g:g}"
        if "e" in text or float(text) != g:
            errors.append(f"config key '{key}': gamma0 {g} cannot be written in a run name, which holds "
                          "gamma0 as a plain decimal of at most 6 significant digits between 0.0001 and "
                          "999999; use such a value (e.g. 0.0001)")
    return errors


def constraint_errors(config: dict) -> list[str]:
    """Constraints between keys (dataset sizes, epoch orderings, run-name round trips)."""
    return (_benign_memorization_errors(config["benign_memorization"])
            + _cold_posterior_errors(config["cold_posterior"])
            + _continual_learning_errors(config["continual_learning"]))


# ---------------------------------------------------------------- entry points


def validate_config(config: dict, schema_path: str | Path) -> dict:
    """Validate `config` in place (coercing --config strings, filling defaults); raise ConfigError
    naming every offending key."""
    schema = yaml.safe_load(Path(schema_path).read_text())
    coerce(config, schema, schema)
    validator = _with_defaults(jsonschema.Draft7Validator)(schema)
    # Fill defaults first (validation of a nested default may need its own defaults).
    errors = sorted(validator.iter_errors(config), key=lambda e: list(e.absolute_path))
    if not errors:
        errors = sorted(validator.iter_errors(config), key=lambda e: list(e.absolute_path))
    lines = []
    for e in errors:
        if e.validator == "additionalProperties":
            lines.append(f"unknown config key '{_key(e)}' (typo?)")
        else:
            lines.append(f"config key '{_key(e)}': {e.message}")
    if not lines:
        lines = constraint_errors(config)
    if lines:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(lines))
    return config


def read_yaml(path: str | Path) -> dict:
    """A YAML config file as a dict; a syntax error names the file, line and column."""
    try:
        config = yaml.safe_load(Path(path).read_text())
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown position"
        raise ConfigError(f"{path}: invalid YAML at {where}: {e.problem or e.context}") from None
    if config is not None and not isinstance(config, dict):
        raise ConfigError(f"{path}: a config file must be a mapping of keys to values")
    return config or {}


def load_config(path: str | Path, schema_path: str | Path) -> dict:
    """Read a YAML config file and validate it."""
    return validate_config(read_yaml(path), schema_path)


def main(argv: list[str]) -> int:
    """Check config files merged in order, as `snakemake --configfile A B` would merge them."""
    from snakemake.utils import update_config

    schema = Path(__file__).resolve().parents[2] / "workflow/schemas/config.schema.yaml"
    config: dict = {}
    try:
        for path in argv:
            update_config(config, read_yaml(path))
        validate_config(config, schema)
    except ConfigError as e:
        print(e, file=sys.stderr)
        return 1
    print(f"{', '.join(argv)}: valid")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
