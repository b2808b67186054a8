# Anagnostidis et al. (ICLR 2023): benign memorization. One job per (run, seed).
BM = config["benign_memorization"]
BM_RUNS = bm.experiment_runs(BM)
BM_DIR = "results/benign_memorization"
BM_DATA = dataset_files(BM["dataset"])
BM_FIGURES = ["probe_vs_epoch", "probe_per_layer", "augmentation_diversity", "capacity"]


wildcard_constraints:
    bm_run=bm.RUN_PATTERN,
    bm_figure="|".join(BM_FIGURES),


def bm_figure_inputs(wildcards):
    runs = BM_RUNS[wildcards.bm_figure]
    kind = "layers" if wildcards.bm_figure == "probe_per_layer" else "metrics"
    return [f"{BM_DIR}/runs/{r.name}/seed{s}/{kind}.json" for r in runs for s in SEEDS]


def bm_targets():
    return [f"{BM_DIR}/figures/{f}.png" for f in BM_FIGURES] + [f"{BM_DIR}/claims.json"]


PAPER_TARGETS["benign_memorization"] = bm_targets


rule bm_train:
    input:
        **BM_DATA,
    output:
        metrics=f"{BM_DIR}/runs/{{bm_run}}/seed{{seed}}/metrics.json",
        model=f"{BM_DIR}/runs/{{bm_run}}/seed{{seed}}/model.pt",
    params:
        cfg=BM,
        device=config["device"],
        checkpoint=lambda w: f"{BM_DIR}/checkpoints/{w.bm_run}_seed{w.seed}.ckpt",
    log:
        "logs/benign_memorization/train/{bm_run}/seed{seed}.log",
    benchmark:
        "logs/benchmarks/benign_memorization/train/{bm_run}/seed{seed}.tsv"
    threads: config["threads"]
    resources:
        **training_resources("benign_memorization"),
    script:
        "../scripts/bm_train.py"


rule bm_probe_layers:
    input:
        **BM_DATA,
        model=f"{BM_DIR}/runs/{{bm_run}}/seed{{seed}}/model.pt",
    output:
        f"{BM_DIR}/runs/{{bm_run}}/seed{{seed}}/layers.json",
    params:
        cfg=BM,
        device=config["device"],
    log:
        "logs/benign_memorization/probe_layers/{bm_run}/seed{seed}.log",
    benchmark:
        "logs/benchmarks/benign_memorization/probe_layers/{bm_run}/seed{seed}.tsv"
    threads: config["threads"]
    resources:
        mem_mb=BM["resources"]["mem_mb"],
        runtime=60,
        gpu=BM["resources"]["gpu"],
    script:
        "../scripts/bm_probe_layers.py"


rule bm_figure:
    input:
        runs=bm_figure_inputs,
        manifest=BM_DATA["manifest"],
    output:
        figure=report(
            f"{BM_DIR}/figures/{{bm_figure}}.png",
            category="benign_memorization",
            caption="../../reports/captions/benign_memorization.rst",
        ),
        table=f"{BM_DIR}/tables/{{bm_figure}}.csv",
        provenance=f"{BM_DIR}/figures/{{bm_figure}}.provenance.json",
    params:
        cfg=BM,
        scale=SCALE,
    log:
        "logs/benign_memorization/figures/{bm_figure}.log",
    benchmark:
        "logs/benchmarks/benign_memorization/figures/{bm_figure}.tsv"
    resources:
        mem_mb=2000,
        runtime=10,
    script:
        "../scripts/bm_figure.py"


rule bm_claims:
    input:
        metrics=lambda w: sorted(
            {
                f"{BM_DIR}/runs/{r.name}/seed{s}/metrics.json"
                for runs in BM_RUNS.values()
                for r in runs
                for s in SEEDS
            }
        ),
        layers=[
            f"{BM_DIR}/runs/{r.name}/seed{s}/layers.json"
            for r in BM_RUNS["probe_per_layer"]
            for s in SEEDS
        ],
        manifest=BM_DATA["manifest"],
    output:
        f"{BM_DIR}/claims.json",
    params:
        cfg=BM,
        stats=config["stats"],
        scale=SCALE,
    log:
        "logs/benign_memorization/claims.log",
    benchmark:
        "logs/benchmarks/benign_memorization/claims.tsv"
    resources:
        mem_mb=2000,
        runtime=10,
    script:
        "../scripts/bm_claims.py"
