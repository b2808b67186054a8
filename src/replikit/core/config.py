"""Configuration: JSON-schema validation that fills defaults and names the offending key, plus the
constraints between keys that a schema cannot express, all checked before any job starts.

`python -m replikit.tools.config_check FILE [FILE ...]` checks config files (merged in order) by hand; it
names the line of a YAML syntax error, which `snakemake --configfile` does not.
"""

from __future__ import annotations

import copy
import functools
import re
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import yaml

if TYPE_CHECKING:  # imported where a config is validated: jsonschema's import takes ~2 s, every job paid it
    import jsonschema

# A scale that starts from another's block: the preflight is the paper settings with budgets cut. A
# paper's own `preflight:` block in config/papers/<paper>.yaml holds its cuts (merged over its `paper:`
# block key by key); config/preflight.yaml may override them further.
BASE_SCALES = {"preflight": "paper"}


class ConfigError(ValueError):
    """The configuration does not match the schema."""


def _jsonschema():
    """jsonschema, imported without its optional IRI-format checker (rfc3987_syntax, installed here
    through jupyter-events), which builds a grammar at import: 1.7 s of every Snakemake start, for a
    format no schema of ours uses."""
    sys.modules.setdefault("rfc3987_syntax", None)  # type: ignore[arg-type]  # None: "not installed"
    import jsonschema

    return jsonschema


def _with_defaults(validator_class):
    jsonschema = _jsonschema()

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


# ---------------------------------------------------------------- entry points


# The one key of config/papers/<name>.yaml that is not a scale's block: the schema of the paper's block.
SCHEMA_KEY = "schema"
LADDER_KEY = "ladder"  # a paper's scale ladder (replikit.plan.ladder): not a scale block


def is_ladder_key(key: str) -> bool:
    """`ladder` (a paper's ladder) or `ladder_<name>` (another of its ladders, e.g. on another task)."""
    return key == LADDER_KEY or key.startswith(LADDER_KEY + "_")


def paper_files(schema_path: str | Path) -> dict[str, Path]:
    """Every paper, by name: config/papers/<name>.yaml of the workflow whose main schema is
    `schema_path` (<root>/workflow/schemas/config.schema.yaml). These files are the list of papers."""
    root = Path(schema_path).resolve().parents[2]
    return {p.stem: p for p in sorted((root / "config" / "papers").glob("*.yaml"))}


def paper_file(path: Path) -> dict:
    """A paper's config file: its scale blocks and its `schema` (read once per version of the file)."""
    stat = path.stat()
    return _read_paper_file(str(path), stat.st_mtime_ns, stat.st_size)


@functools.lru_cache(maxsize=64)
def _read_paper_file(path: str, mtime_ns: int, size: int) -> dict:
    blocks = read_yaml(path)
    schema = blocks.get(SCHEMA_KEY)
    if not isinstance(schema, dict) or schema.get("type") != "object":
        raise ConfigError(f"{path}: no `{SCHEMA_KEY}:` mapping with type: object (the JSON schema of the "
                          "paper's config block); add one, with its keys under `properties`")
    return blocks


def full_schema(schema_path: str | Path) -> dict:
    """The main schema with each paper's `schema` (from its config file) under `properties.<paper>`
    (its `definitions` join the main ones) and the paper names as the enum and default of `papers`."""
    schema = yaml.safe_load(Path(schema_path).read_text())
    files = paper_files(schema_path)
    for name, path in files.items():
        fragment = copy.deepcopy(paper_file(path)[SCHEMA_KEY])
        schema.setdefault("definitions", {}).update(fragment.pop("definitions", {}))
        schema["properties"][name] = fragment
    schema["properties"]["papers"]["items"] = {"enum": list(files)}
    schema["properties"]["papers"]["default"] = list(files)
    return schema


def scale_block(path: Path, scale: str) -> dict:
    """A paper file's settings at `scale`: its base scale's block (BASE_SCALES), then the scale's own
    over it (a copy)."""
    blocks = {k: v for k, v in paper_file(path).items() if k != SCHEMA_KEY and not is_ladder_key(k)}
    base = BASE_SCALES.get(scale)
    if scale not in blocks and base not in blocks:
        raise ConfigError(f"{path} has no block for scale {scale!r} (it has: {', '.join(blocks)}); "
                          f"add one, or set scale to one of those")
    settings = copy.deepcopy(blocks[base] or {}) if base in blocks else {}
    return _merged(settings, copy.deepcopy(blocks.get(scale) or {}))


def with_paper_settings(config: dict, schema_path: str | Path) -> dict:
    """Each paper's block of its scale (config/papers/<paper>.yaml, next to the workflow) under the
    config's own `<paper>:` keys, which win; in place."""
    scale = config.get("scale", "default")
    for name, path in paper_files(schema_path).items():
        settings = scale_block(path, scale)
        own = config.get(name) or {}
        if not isinstance(own, dict):
            continue  # the schema names it
        config[name] = _merged(settings, own)  # key order kept: params compare it
    return config


def _merged(base: dict, over: dict) -> dict:
    for key, value in over.items():
        base[key] = _merged(base[key], value) if isinstance(value, dict) and isinstance(base.get(key), dict) \
            else value
    return base


Constraints = Callable[[dict], list[str]]


def validate_config(config: dict, schema_path: str | Path, constraints: Constraints | None = None,
                    files: list[str | Path] = ()) -> dict:
    """Complete `config` with its papers' settings for its scale, then validate it in place (coercing
    --config strings, filling defaults); raise ConfigError naming every offending key. `constraints`
    (config -> error lines) checks what a schema cannot express once the schema holds: the caller
    passes the papers' (replikit.papers.registry.config_errors), so this module imports no paper.
    `files`: the config files merged into `config`, in order, so that an unknown key names its file."""
    with_paper_settings(config, schema_path)
    schema = full_schema(schema_path)
    coerce(config, schema, schema)
    jsonschema = _jsonschema()

    validator = _with_defaults(jsonschema.Draft7Validator)(schema)
    # Fill defaults first (validation of a nested default may need its own defaults).
    errors = sorted(validator.iter_errors(config), key=lambda e: list(e.absolute_path))
    if not errors:
        errors = sorted(validator.iter_errors(config), key=lambda e: list(e.absolute_path))
    lines = []
    for e in errors:
        if e.validator == "additionalProperties":
            lines += unknown_key_lines(e, config.get("scale", "default"), schema_path, files)
        else:
            lines.append(f"config key '{_key(e)}': {e.message}")
    if not lines and constraints is not None:
        lines = constraints(config)
    if lines:
        raise ConfigError("invalid configuration:\n  " + "\n  ".join(lines))
    return config


def _holds(data: object, path: list[str]) -> bool:
    for part in path:
        if not isinstance(data, dict) or part not in data:
            return False
        data = data[part]
    return True


def key_origin(path: list[str], scale: str, schema_path: str | Path, files: list[str | Path] = ()) -> str:
    """Where the config key at `path` was set: the last of `files` that sets it, else the paper's own
    config file (its block of `scale`), else `--config`."""
    for f in reversed([Path(f) for f in files]):
        if f.is_file() and _holds(read_yaml(f), path):
            return str(f)
    paper = paper_files(schema_path).get(path[0]) if path else None
    if paper is not None:
        blocks = paper_file(paper)
        for block in (scale, BASE_SCALES.get(scale)):
            if block and _holds(blocks.get(block) or {}, path[1:]):
                root = Path(schema_path).resolve().parents[2]
                return f"{paper.relative_to(root) if paper.is_relative_to(root) else paper} (block '{block}')"
    return "--config or a config file"


def unknown_key_lines(error: jsonschema.ValidationError, scale: str, schema_path: str | Path,
                      files: list[str | Path] = ()) -> list[str]:
    """One line per unknown key of an additionalProperties error: the key, the file that sets it and
    the nearest valid key."""
    import difflib

    path = [str(p) for p in error.absolute_path]
    valid = sorted(error.schema.get("properties", {}))
    lines = []
    for extra in (k for k in error.instance if k not in valid):
        near = difflib.get_close_matches(str(extra), valid, n=1, cutoff=0.6)
        hint = f"did you mean '{'.'.join(path + near)}'?" if near else f"valid keys here: {', '.join(valid)}"
        lines.append(f"unknown config key '{'.'.join(path + [str(extra)])}' in "
                     f"{key_origin(path + [str(extra)], scale, schema_path, files)}: {hint}")
    return lines


# The folder under results/<paper>/ of a paper's figures, tables and scorecard on a dataset other than
# its block's own: results/<paper>/on-<dataset>/ (papers.glue.results_dir; the report's sections).
ON_DATASET = "on-"


def check_tree_scale(results: Path, scale: str, outdir: str) -> None:
    """Stop when the output tree's `results/` holds another scale's scorecards (a run here would rerun
    and overwrite them): name the scale found and the one-line move that puts them in their own tree."""
    import json

    found = set()
    # a paper's own scorecard, and one on another dataset (results/<paper>/on-<dataset>/)
    for card in sorted([*results.glob("*/claims.json"), *results.glob(f"*/{ON_DATASET}*/claims.json")]):
        try:
            found.add(json.loads(card.read_text()).get("scale"))
        except (OSError, ValueError):
            continue
    other = sorted(str(f) for f in found - {scale, None})
    if other:
        where = "." if outdir == "." else outdir
        raise ConfigError(
            f"{Path(where) / 'results'} holds {', '.join(other)}-scale results, and this run is at scale "
            f"{scale!r}: it would rerun and overwrite them. Each scale now has its own output tree "
            f"(config key outdir; the smoke, paper and preflight configs set scales/<scale>). Move the old "
            f"tree into its own, e.g. `mkdir -p scales/{other[0]} && mv results resources logs .snakemake "
            f"scales/{other[0]}/` (run where the tree is), or delete it to rebuild it at this scale")


SHARED_RESOURCES = ("data", "downloads")  # under resources/: the same at every scale, so shared


def share_prepared_data(base: Path, tree: Path = Path(".")) -> list[Path]:
    """Point `tree`'s resources/data and resources/downloads at `base`'s (the tree the run started
    in), so that every scale's tree uses the datasets prepared once: a prepared dataset is the same at
    every scale (its source files and counts do not depend on the scale, and its manifest records
    their checksums). A tree that already holds its own copy keeps it. Returns the links made."""
    made = []
    if Path(base).resolve() == Path(tree).resolve():
        return made
    for name in SHARED_RESOURCES:
        link, target = Path(tree) / "resources" / name, Path(base).resolve() / "resources" / name
        if link.is_symlink() or link.exists():
            continue
        target.mkdir(parents=True, exist_ok=True)
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(target, target_is_directory=True)
        made.append(link)
    return made


class _UniqueKeyLoader(yaml.SafeLoader):
    """YAML's safe loader, except that a key repeated in one mapping is an error (plain YAML keeps the
    last value silently, so an edited copy of a block would hide the original)."""

    def construct_mapping(self, node: yaml.MappingNode, deep: bool = False) -> dict:
        seen: set = set()
        for key_node, _ in node.value:
            key = self.construct_object(key_node, deep=deep)
            if key in seen:
                raise yaml.constructor.ConstructorError(
                    None, None, f"key {key!r} appears twice in one mapping; keep one", key_node.start_mark)
            seen.add(key)
        return super().construct_mapping(node, deep)


def read_yaml(path: str | Path) -> dict:
    """A YAML config file as a dict; a syntax error or a repeated key names the file, line and column."""
    try:
        config = yaml.load(Path(path).read_text(), Loader=_UniqueKeyLoader)  # noqa: S506 (a SafeLoader)
    except yaml.MarkedYAMLError as e:
        mark = e.problem_mark or e.context_mark
        where = f"line {mark.line + 1}, column {mark.column + 1}" if mark else "unknown position"
        raise ConfigError(f"{path}: invalid YAML at {where}: {e.problem or e.context}") from None
    if config is not None and not isinstance(config, dict):
        raise ConfigError(f"{path}: a config file must be a mapping of keys to values")
    return config or {}


def load_config(path: str | Path, schema_path: str | Path, constraints: Constraints | None = None) -> dict:
    """Read a YAML config file and validate it (`constraints`: see validate_config)."""
    return validate_config(read_yaml(path), schema_path, constraints, [path])
