# Anagnostidis et al. (ICLR 2023): benign memorization. One job per (run, seed).
BM = config["benign_memorization"]
BM_RUNS = bm.experiment_runs(BM)
BM_DATA = DATASET_FILES[BM["dataset"]]
BM_RES = BM["resources"]
BM_TRAINING = bm.training_config(BM)


wildcard_constraints:
    bm_run=bm.RUN_PATTERN,
    bm_figure="|".join(bm.FIGURES),


rule bm_train:
    input:
        **BM_DATA,
    output:
        metrics=bm.run_file("{bm_run}", "{seed}", "metrics.json"),
        model=bm.run_file("{bm_run}", "{seed}", "model.pt"),
    params:
        cfg=BM_TRAINING,
        checkpoint=lambda w: f"{bm.RESULTS}/checkpoints/{w.bm_run}_seed{w.seed}.ckpt",
    log:
        "logs/benign_memorization/train/{bm_run}/seed{seed}.log",
    benchmark:
        "logs/benchmarks/benign_memorization/train/{bm_run}/seed{seed}.tsv"
    threads: config["threads"]
    resources:
        mem_mb=BM_RES["mem_mb"],
        runtime=BM_RES["runtime"],
        gpu=BM_RES["gpu"],
    conda:
        "../../envs/replikit.yaml"
    script:
        "../scripts/bm_train.py"


rule bm_probe_layers:
    input:
        **BM_DATA,
        model=bm.run_file("{bm_run}", "{seed}", "model.pt"),
    output:
        bm.run_file("{bm_run}", "{seed}", "layers.json"),
    params:
        cfg=BM_TRAINING,
    log:
        "logs/benign_memorization/probe_layers/{bm_run}/seed{seed}.log",
    benchmark:
        "logs/benchmarks/benign_memorization/probe_layers/{bm_run}/seed{seed}.tsv"
    threads: config["threads"]
    resources:
        mem_mb=BM_RES["mem_mb"],
        runtime=60,
        gpu=BM_RES["gpu"],
    conda:
        "../../envs/replikit.yaml"
    script:
        "../scripts/bm_probe_layers.py"


rule bm_figure:
    input:
        runs=lambda w: bm.figure_inputs(BM_RUNS, w.bm_figure, SEEDS),
        manifest=BM_DATA["manifest"],
    output:
        figure=report(
            f"{bm.RESULTS}/figures/{{bm_figure}}.png",
            category="benign_memorization",
            caption="../../reports/captions/benign_memorization.rst",
        ),
        table=f"{bm.RESULTS}/tables/{{bm_figure}}.csv",
        provenance=f"{bm.RESULTS}/figures/{{bm_figure}}.provenance.json",
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
    conda:
        "../../envs/replikit.yaml"
    script:
        "../scripts/bm_figure.py"


rule bm_claims:
    input:
        **bm.claim_inputs(BM_RUNS, SEEDS),
        manifest=BM_DATA["manifest"],
    output:
        f"{bm.RESULTS}/claims.json",
    params:
        cfg=BM,
        stats=config["stats"],
        paper=PAPER_SETTINGS["benign_memorization"],
        scale=SCALE,
    log:
        "logs/benign_memorization/claims.log",
    benchmark:
        "logs/benchmarks/benign_memorization/claims.tsv"
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../envs/replikit.yaml"
    script:
        "../scripts/bm_claims.py"
