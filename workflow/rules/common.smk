# Shared helpers for all rule files: paths, per-paper config access, resources.
from replikit.papers import benign_memorization as bm

SEEDS = config["seeds"]
SCALE = config["scale"]


wildcard_constraints:
    seed=r"\d+",
    dataset=r"cifar10|mnist",


def dataset_files(dataset):
    return {
        "tensors": f"resources/data/{dataset}/tensors.pt",
        "manifest": f"resources/data/{dataset}/manifest.json",
    }


def training_resources(section):
    """Resources of a training job: memory, SLURM runtime (minutes) and GPUs."""
    res = config[section]["resources"]
    return {"mem_mb": res["mem_mb"], "runtime": res["runtime"], "gpu": res["gpu"]}


def paper_targets():
    targets = []
    for paper in config["papers"]:
        targets += PAPER_TARGETS[paper]()
    return targets


def claims_files():
    return [f"results/{paper}/claims.json" for paper in config["papers"]]


def figure_files():
    return [f for paper in config["papers"] for f in PAPER_TARGETS[paper]() if f.endswith(".png")]


PAPER_TARGETS = {}
