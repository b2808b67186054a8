import pytest
import yaml

from replikit.config import ConfigError, load_config, validate_config

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
