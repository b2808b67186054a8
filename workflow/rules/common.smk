# Shared configuration for all rule files: seeds, scale, dataset paths, per-paper targets.
from replikit.papers import benign_memorization as bm

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
PAPER_TARGETS = {"benign_memorization": bm.targets}
TARGETS = [t for paper in config["papers"] for t in PAPER_TARGETS[paper]()]
CLAIMS = [t for t in TARGETS if t.endswith("claims.json")]
FIGURES = [t for t in TARGETS if t.endswith(".png")]
