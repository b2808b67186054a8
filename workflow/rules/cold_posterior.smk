# Noci et al. (NeurIPS 2021) and Bachmann et al. (ICML 2022): the cold posterior effect.
# One job per (condition, seed) samples every temperature of the config.
CP = config["cold_posterior"]
CP_RUNS = cp.experiment_runs(CP)
CP_DATA = DATASET_FILES[CP["dataset"]]
CP_RES = CP["resources"]
CP_TRAINING = cp.training_config(CP)


wildcard_constraints:
    cp_run=cp.RUN_PATTERN,
    cp_figure="|".join(cp.FIGURES),


rule cp_sample:
    input:
        **CP_DATA,
    output:
        cp.run_file("{cp_run}", "{seed}"),
    params:
        cfg=CP_TRAINING,
        workdir=lambda w: f"{cp.RESULTS}/checkpoints/{w.cp_run}_seed{w.seed}",
    log:
        "logs/cold_posterior/sample/{cp_run}/seed{seed}.log",
    benchmark:
        "logs/benchmarks/cold_posterior/sample/{cp_run}/seed{seed}.tsv"
    threads: config["threads"]
    resources:
        mem_mb=CP_RES["mem_mb"],
        runtime=CP_RES["runtime"],
        gpu=CP_RES["gpu"],
    conda:
        "../../envs/replikit.yaml"
    script:
        "../scripts/cp_train.py"


rule cp_figure:
    input:
        runs=lambda w: cp.figure_inputs(CP_RUNS, w.cp_figure, SEEDS),
        manifest=CP_DATA["manifest"],
    output:
        figure=report(
            f"{cp.RESULTS}/figures/{{cp_figure}}.png",
            category="cold_posterior",
            caption="../../reports/captions/cold_posterior.rst",
        ),
        table=f"{cp.RESULTS}/tables/{{cp_figure}}.csv",
        provenance=f"{cp.RESULTS}/figures/{{cp_figure}}.provenance.json",
    params:
        cfg=CP,
        scale=SCALE,
    log:
        "logs/cold_posterior/figures/{cp_figure}.log",
    benchmark:
        "logs/benchmarks/cold_posterior/figures/{cp_figure}.tsv"
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../envs/replikit.yaml"
    script:
        "../scripts/cp_figure.py"


rule cp_claims:
    input:
        runs=cp.claim_inputs(CP_RUNS, SEEDS),
        manifest=CP_DATA["manifest"],
    output:
        f"{cp.RESULTS}/claims.json",
    params:
        cfg=CP,
        stats=config["stats"],
        paper=PAPER_SETTINGS["cold_posterior"],
        scale=SCALE,
    log:
        "logs/cold_posterior/claims.log",
    benchmark:
        "logs/benchmarks/cold_posterior/claims.tsv"
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../envs/replikit.yaml"
    script:
        "../scripts/cp_claims.py"
