# Graldi et al. (ICML 2025): feature-learning strength, width and forgetting. One job per (run, seed);
# a run sweeps the width or gamma0 of one seed (see replikit.papers.continual_learning).
CL = config["continual_learning"]
CL_RUNS = cl.experiment_runs(CL)
CL_RES = CL["resources"]
CL_SEEDS = CL["seeds"] or SEEDS
CL_MAIN_DATA = DATASET_FILES["cifar10" if CL["stream"] == "split_cifar10" else "mnist"]


wildcard_constraints:
    cl_run=cl.RUN_PATTERN,
    cl_figure="|".join(cl.FIGURES),


rule cl_train:
    input:
        unpack(lambda w: DATASET_FILES[cl.RunSpec.parse(w.cl_run).dataset]),
    output:
        cl.run_file("{cl_run}", "{seed}"),
    params:
        cfg=lambda w: cl.run_config(CL, w.cl_run),
        checkpoint=lambda w: f"{cl.RESULTS}/checkpoints/{w.cl_run}_seed{w.seed}.json",
    log:
        "logs/continual_learning/train/{cl_run}/seed{seed}.log",
    benchmark:
        "logs/benchmarks/continual_learning/train/{cl_run}/seed{seed}.tsv"
    threads: config["threads"]
    resources:
        mem_mb=CL_RES["mem_mb"],
        runtime=CL_RES["runtime"],
        gpu=CL_RES["gpu"],
    conda:
        "../../envs/replikit.yaml"
    script:
        "../scripts/cl_train.py"


rule cl_figure:
    input:
        runs=lambda w: cl.figure_inputs(CL_RUNS, w.cl_figure, CL_SEEDS),
        manifest=lambda w: DATASET_FILES["mnist" if w.cl_figure == "similarity" else
                                         ("cifar10" if CL["stream"] == "split_cifar10" else "mnist")]["manifest"],
    output:
        figure=report(
            f"{cl.RESULTS}/figures/{{cl_figure}}.png",
            category="continual_learning",
            caption="../../reports/captions/continual_learning.rst",
        ),
        table=f"{cl.RESULTS}/tables/{{cl_figure}}.csv",
        provenance=f"{cl.RESULTS}/figures/{{cl_figure}}.provenance.json",
    params:
        cfg=CL,
        scale=SCALE,
    log:
        "logs/continual_learning/figures/{cl_figure}.log",
    benchmark:
        "logs/benchmarks/continual_learning/figures/{cl_figure}.tsv"
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../envs/replikit.yaml"
    script:
        "../scripts/cl_figure.py"


rule cl_claims:
    input:
        metrics=cl.claim_inputs(CL_RUNS, CL_SEEDS),
        manifest=CL_MAIN_DATA["manifest"],
    output:
        f"{cl.RESULTS}/claims.json",
    params:
        cfg=CL,
        stats=config["stats"],
        paper=PAPER_SETTINGS["continual_learning"],
        scale=SCALE,
    log:
        "logs/continual_learning/claims.log",
    benchmark:
        "logs/benchmarks/continual_learning/claims.tsv"
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../envs/replikit.yaml"
    script:
        "../scripts/cl_claims.py"
