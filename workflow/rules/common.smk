# Shared configuration for all rule files: seeds, scale, dataset paths, per-paper targets.
from pathlib import Path

from replikit.papers import benign_memorization as bm
from replikit.papers import latent_lookahead as ll
from replikit.papers import continual_learning as cl
from replikit.papers import cold_posterior as cp
from replikit.config import load_config
from replikit.fidelity import paper_settings

SEEDS = config["seeds"]

SCALE = config["scale"]
DATASET_FILES = {
    name: {
        "tensors": f"resources/data/{name}/tensors.pt",
        "manifest": f"resources/data/{name}/manifest.json",
    }
    for name in ("cifar10", "mnist")
}
# Each paper's final targets (figures and claims.json), for `rule all` and the report.
PAPER_TARGETS = {"benign_memorization": bm.targets, "latent_lookahead": ll.targets,
                 "continual_learning": cl.targets, "cold_posterior": cp.targets}
# Rule-name prefix of each paper's rules (bm_train, ...): the time-limit hint names its config key.
RULE_PREFIXES = {"bm": "benign_memorization", "ll": "latent_lookahead", "cl": "continual_learning",
                 "cp": "cold_posterior"}
# The papers' own settings: every scorecard row lists how this run departs from them.
PAPER_CONFIG = load_config(ROOT / "config/paper.yaml", ROOT / "workflow/schemas/config.schema.yaml")
PAPER_SETTINGS = {p: paper_settings(PAPER_CONFIG, p) for p in PAPER_TARGETS}
TARGETS = [t for paper in config["papers"] for t in PAPER_TARGETS[paper]()]
CLAIMS = [t for t in TARGETS if t.endswith("claims.json")]
FIGURES = [t for t in TARGETS if t.endswith(".png")]
# Throughput measurements the report lists: the shared training loop's, and any a paper adds.
BENCHMARKS = ["results/benchmarks/training_loop.json"] + [
    t for t in TARGETS if Path(t).name.startswith("benchmark") and t.endswith(".json")
]
