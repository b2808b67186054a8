import shutil

import pytest
import yaml

from replikit.core.config import ConfigError, load_config, validate_config

SCHEMA = "workflow/schemas/config.schema.yaml"


@pytest.mark.parametrize("name", ["config.yaml", "smoke.yaml", "paper.yaml"])
def test_shipped_configs_validate(root, name):
    cfg = load_config(root / "config" / name, root / SCHEMA)
    assert cfg["benign_memorization"]["probe_k"] == 20  # filled from the schema default
    assert len(cfg["seeds"]) >= 3


def test_defaults_fill_nested_sections(root):
    cfg = validate_config({}, root / SCHEMA)
    assert cfg["data"]["search_paths"] == ["../shared/datasets"]
    assert cfg["benign_memorization"]["resources"]["gpu"] == 0
    assert cfg["benign_memorization"]["model"]["name"] == "cnn4"


def test_typo_names_the_key(root):
    with pytest.raises(ConfigError, match=r"benign_memorization\.epochz"):
        validate_config({"benign_memorization": {"epochz": 3}}, root / SCHEMA)


def test_typo_names_its_file_and_the_nearest_valid_key(root, tmp_path):
    """A typo in a config file names that file and the key it most likely meant; one in a paper's own
    config file names that file and its block."""
    (tmp_path / "c.yaml").write_text("scale: smoke\nseedz: [0]\nbenign_memorization: {epochz: 3}\n")
    with pytest.raises(ConfigError) as e:
        load_config(tmp_path / "c.yaml", root / SCHEMA)
    assert f"unknown config key 'seedz' in {tmp_path / 'c.yaml'}: did you mean 'seeds'?" in str(e.value)
    assert "'benign_memorization.epochz' in " in str(e.value)
    assert "did you mean 'benign_memorization.epochs'?" in str(e.value)
    (tmp_path / "workflow/schemas").mkdir(parents=True)
    (tmp_path / "config/papers").mkdir(parents=True)
    schema = tmp_path / "workflow/schemas/config.schema.yaml"
    schema.write_text((root / SCHEMA).read_text())
    (tmp_path / "config/papers/toy.yaml").write_text(
        "smoke: {stepz: 2}\nschema: {type: object, additionalProperties: false, properties: {steps: {}}}\n")
    with pytest.raises(ConfigError, match=r"'toy.stepz' in config/papers/toy.yaml \(block 'smoke'\): "
                                          r"did you mean 'toy.steps'\?"):
        validate_config({"scale": "smoke"}, schema)


def test_wrong_type_names_the_key(root):
    with pytest.raises(ConfigError, match=r"benign_memorization\.model\.width.*integer"):
        validate_config({"benign_memorization": {"model": {"width": "wide"}}}, root / SCHEMA)
    with pytest.raises(ConfigError, match=r"seeds"):
        validate_config({"seeds": [0, 0]}, root / SCHEMA)
    with pytest.raises(ConfigError, match=r"diversity\.n_augs\.1"):
        validate_config({"benign_memorization": {"diversity": {"n_augs": [1, "many"]}}}, root / SCHEMA)


def test_paper_yaml_follows_the_official_settings(root):
    cfg = yaml.safe_load((root / "config/papers/benign_memorization.yaml").read_text())["paper"]
    assert cfg["model"] == {"name": "resnet18", "width": 64, "projector_width": 65536}
    assert cfg["optimizer"]["lr"] == 3e-4 and cfg["batch_size"] == 256 and cfg["epochs"] == 10000
    assert cfg["augmentation"] == "full"


def test_a_papers_preflight_block_cuts_its_paper_block_key_by_key(root, tmp_path):
    """scale: preflight = the paper's `paper:` block, its own `preflight:` cuts over it, then the
    config's keys; a paper with no block for a scale is named with the blocks it has."""
    from replikit.core.config import with_paper_settings

    (tmp_path / "workflow/schemas").mkdir(parents=True)
    (tmp_path / "config/papers").mkdir(parents=True)
    schema = tmp_path / "workflow/schemas/config.schema.yaml"
    schema.write_text((root / "workflow/schemas/config.schema.yaml").read_text())
    (tmp_path / "config/papers/toy.yaml").write_text(
        "paper: {model: {width: 512, depth: 8}, steps: 1000, lr: 0.1}\n"
        "preflight: {steps: 2, model: {depth: 2}}\n"
        "schema: {type: object}\n")
    cfg = with_paper_settings({"scale": "preflight", "toy": {"lr": 0.5}}, schema)
    assert cfg["toy"] == {"model": {"width": 512, "depth": 2}, "steps": 2, "lr": 0.5}
    assert with_paper_settings({"scale": "paper"}, schema)["toy"]["steps"] == 1000
    with pytest.raises(ConfigError, match="toy.yaml has no block for scale 'smoke' .it has: paper, pre"):
        with_paper_settings({"scale": "smoke"}, schema)


def test_a_key_repeated_in_a_config_file_is_an_error_naming_its_line(tmp_path):
    """Plain YAML keeps the last of two equal keys silently: a second, edited copy of a block would hide
    the first one."""
    from replikit.core.config import read_yaml

    path = tmp_path / "twice.yaml"
    path.write_text("smoke:\n  steps: 10\ndefault:\n  steps: 20\nsmoke:\n  steps: 30\n")
    with pytest.raises(ConfigError, match=r"twice.yaml: invalid YAML at line 5, column 1: key 'smoke'"):
        read_yaml(path)


def test_a_scale_tree_links_the_base_trees_prepared_data(tmp_path):
    from replikit.core.config import share_prepared_data

    tree = tmp_path / "scales/smoke"
    tree.mkdir(parents=True)
    made = share_prepared_data(tmp_path, tree)
    assert made == [tree / "resources/data", tree / "resources/downloads"]
    assert (tree / "resources/data").resolve() == (tmp_path / "resources/data").resolve()
    (tree / "resources/data/x.txt").write_text("prepared once")  # written through the link
    assert (tmp_path / "resources/data/x.txt").read_text() == "prepared once"
    assert share_prepared_data(tmp_path, tree) == []  # already linked: nothing to do
    assert share_prepared_data(tmp_path, tmp_path) == []  # the base tree itself: no link to itself
    old = tmp_path / "rung"  # a tree that already prepared its own copy keeps it
    (old / "resources/data").mkdir(parents=True)
    assert share_prepared_data(tmp_path, old) == [old / "resources/downloads"]
    assert not (old / "resources/data").is_symlink()


def test_a_config_typo_stops_the_test_run_once_naming_its_file(root, tmp_path, monkeypatch):
    """tests/conftest.py checks the scale configs before any test runs: a typo is one message (its
    file, the key and the nearest valid key), not a failure of every test that loads the config."""
    from tests import conftest

    for part in ("config", "workflow/schemas"):
        shutil.copytree(root / part, tmp_path / part)
    smoke = tmp_path / "config/smoke.yaml"
    smoke.write_text(smoke.read_text() + "\nseedz: [0]\n")
    monkeypatch.setattr(conftest, "ROOT", tmp_path)
    with pytest.raises(pytest.exit.Exception) as stop:
        conftest.stop_on_config_errors()
    assert stop.value.returncode == 4
    said = stop.value.msg
    assert f"config/smoke.yaml: invalid configuration:\n  unknown config key 'seedz' in {smoke}" in said
    assert "did you mean 'seeds'?" in stop.value.msg
