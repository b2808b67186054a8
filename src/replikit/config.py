"""Configuration: JSON-schema validation that fills defaults and names the offending key."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import jsonschema
import yaml


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


def validate_config(config: dict, schema_path: str | Path) -> dict:
    """Validate `config` in place (filling defaults); raise ConfigError naming the key."""
    schema = yaml.safe_load(Path(schema_path).read_text())
    validator = _with_defaults(jsonschema.Draft7Validator)(schema)
    # Fill defaults first (validation of a nested default may need its own defaults).
    errors = sorted(validator.iter_errors(config), key=lambda e: list(e.absolute_path))
    if not errors:
        errors = sorted(validator.iter_errors(config), key=lambda e: list(e.absolute_path))
    if errors:
        lines = []
        for e in errors:
            if e.validator == "additionalProperties":
                lines.append(f"unknown config key '{_key(e)}' (typo?)")
            else:
                lines.append(f"config key '{_key(e)}': {e.message}")
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(lines))
    return config


def load_config(path: str | Path, schema_path: str | Path) -> dict:
    """Read a YAML config file and validate it."""
    config = yaml.safe_load(Path(path).read_text()) or {}
    return validate_config(config, schema_path)
