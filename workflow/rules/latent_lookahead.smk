# Noci et al. (2026): latent lookahead on planning tasks. Data per task, one job per (run, seed).
LL = config["latent_lookahead"]
LL_RUNS = ll.experiment_runs(LL)
LL_RES = LL["resources"]
LL_SEEDS = ll.paper_seeds(LL, SEEDS)


wildcard_constraints:
    ll_run=ll.RUN_PATTERN,
    ll_task=ll.TASK_PATTERN,
    ll_figure="|".join(ll.FIGURES),


rule ll_data:
    output:
        directory(ll.data_dir("{ll_task}")),
    params:
        cfg=lambda w: LL["data"][w.ll_task],
    log:
        "logs/latent_lookahead/data/{ll_task}.log",
    benchmark:
        "logs/benchmarks/latent_lookahead/data/{ll_task}.tsv"
    threads: 1
    resources:
        mem_mb=4000,
        runtime=60,
    conda:
        "../../envs/replikit.yaml"
    script:
        "../scripts/ll_data.py"


rule ll_train:
    input:
        data=lambda w: ll.data_dir(ll.RunSpec.parse(w.ll_run).task),
    output:
        metrics=ll.run_file("{ll_run}", "{seed}"),
    params:
        cfg=lambda w: ll.training_config(LL, ll.RunSpec.parse(w.ll_run).task),
        checkpoint=lambda w: f"{ll.RESULTS}/checkpoints/{w.ll_run}_seed{w.seed}.ckpt",
    log:
        "logs/latent_lookahead/train/{ll_run}/seed{seed}.log",
    benchmark:
        "logs/benchmarks/latent_lookahead/train/{ll_run}/seed{seed}.tsv"
    threads: config["threads"]
    resources:
        mem_mb=LL_RES["mem_mb"],
        runtime=LL_RES["runtime"],
        gpu=LL_RES["gpu"],
    conda:
        "../../envs/replikit.yaml"
    script:
        "../scripts/ll_train.py"


rule ll_benchmark:
    input:
        data=ll.data_dir(LL["benchmark"]["task"]),
    output:
        f"{ll.RESULTS}/benchmark.json",
    params:
        cfg=ll.training_config(LL, LL["benchmark"]["task"]),
        bench=LL["benchmark"],
    log:
        "logs/latent_lookahead/benchmark.log",
    benchmark:
        "logs/benchmarks/latent_lookahead/benchmark.tsv"
    threads: config["threads"]
    resources:
        mem_mb=LL_RES["mem_mb"],
        runtime=30,
        gpu=LL_RES["gpu"],
    conda:
        "../../envs/replikit.yaml"
    script:
        "../scripts/ll_benchmark.py"


rule ll_figure:
    input:
        runs=lambda w: ll.figure_inputs(LL_RUNS, w.ll_figure, LL_SEEDS),
    output:
        figure=report(
            f"{ll.RESULTS}/figures/{{ll_figure}}.png",
            category="latent_lookahead",
            caption="../../reports/captions/latent_lookahead.rst",
        ),
        table=f"{ll.RESULTS}/tables/{{ll_figure}}.csv",
        provenance=f"{ll.RESULTS}/figures/{{ll_figure}}.provenance.json",
    params:
        cfg=LL,
        scale=SCALE,
    log:
        "logs/latent_lookahead/figures/{ll_figure}.log",
    benchmark:
        "logs/benchmarks/latent_lookahead/figures/{ll_figure}.tsv"
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../envs/replikit.yaml"
    script:
        "../scripts/ll_figure.py"


rule ll_claims:
    input:
        metrics=ll.claim_inputs(LL_RUNS, LL_SEEDS),
    output:
        f"{ll.RESULTS}/claims.json",
    params:
        cfg=LL,
        stats=config["stats"],
        paper=PAPER_SETTINGS["latent_lookahead"],
        scale=SCALE,
    log:
        "logs/latent_lookahead/claims.log",
    benchmark:
        "logs/benchmarks/latent_lookahead/claims.tsv"
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../envs/replikit.yaml"
    script:
        "../scripts/ll_claims.py"
