from replikit.config import load_config
from replikit.fidelity import claim_deviations, describe, deviations, flatten


def _cfg(root, name: str) -> dict:
    return load_config(root / "config" / name, root / "workflow/schemas/config.schema.yaml")


def test_flatten_nested_settings():
    assert flatten({"a": {"b": 1, "c": {"d": [1, 2]}}, "e": None}) == {"a.b": 1, "a.c.d": [1, 2], "e": None}


def test_paper_settings_against_themselves_are_faithful(root):
    paper = _cfg(root, "paper.yaml")
    for section in ("benign_memorization", "cold_posterior", "continual_learning", "latent_lookahead"):
        assert deviations(paper[section], paper[section], paper["seeds"], paper["seeds"]) == []


def test_smoke_deviations_are_computed_from_the_configs(root):
    smoke, paper = _cfg(root, "smoke.yaml"), _cfg(root, "paper.yaml")
    devs = {d["key"]: d for d in deviations(smoke["benign_memorization"], paper["benign_memorization"],
                                            smoke["seeds"], paper["seeds"], subset=True)}
    assert devs["augmentation"] == {"key": "augmentation", "ours": "light", "paper": "full"}
    assert devs["model.name"]["ours"] == "cnn4" and devs["model.name"]["paper"] == "resnet18"
    assert devs["data"]["paper"] == "full dataset"
    assert "resources.gpu" not in devs and "checkpoint_every" not in devs and "eval_every" not in devs
    ll = {d["key"] for d in deviations(smoke["latent_lookahead"], paper["latent_lookahead"], [0], [0, 1])}
    assert {"tau_scaling.task", "data.maze.grid_n", "model.n_embd", "seeds"} <= ll  # LL-4's 9x9 task too
    assert "tasks" not in ll  # the smoke scale runs all four of the paper's tasks


def test_a_claim_sees_shared_deviations_and_its_own_experiments_only():
    devs = [{"key": "model.width", "ours": 8, "paper": 64},
            {"key": "capacity.n_augs", "ours": [1], "paper": [1, 2]},
            {"key": "diversity.n_augs", "ours": [1], "paper": [1, 4]}]
    mine = claim_deviations(devs, {"capacity", "diversity"}, ("capacity",))
    assert [d["key"] for d in mine] == ["model.width", "capacity.n_augs"]
    assert describe(mine) == "model.width: 8 (paper: 64); capacity.n_augs: [1] (paper: [1, 2])"
