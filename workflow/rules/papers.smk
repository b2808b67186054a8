# Every enabled paper's rules, generated from its declaration (replikit.papers.interface.Paper):
# one rule per stage (<prefix>_train, ...), <prefix>_figure and <prefix>_claims.
for paper in PAPERS:
    P, PCFG = paper.name, config[paper.name]
    P_SEEDS = paper.seeds(PCFG, SEEDS)
    # config key <paper>.fresh_seeds: claims judged again on seeds never seen (glue.fresh_seeds)
    P_FRESH = fresh_seeds(config, P)
    # config key <paper>.earlier_seeds: claims shown again on the seeds they had before (glue.earlier_seeds)
    P_EARLIER = earlier_seeds(config, P)
    # results/<paper>, or results/<paper>/on-<dataset> on another dataset than its block's own (glue.results_dir)
    P_RESULTS = RESULTS[P]

    # config key batch_seeds: one job per run for all P_SEEDS, and one per run for each extra seed set
    # (glue.stage_rules)
    P_EXTRA = extra_seeds(P_FRESH, P_EARLIER)
    # the longest jobs first, as the scale's published run timed them, and what feeds them with them
    P_PRIORITY = stage_priorities(STAGE_SECONDS, P, [s.name for s in paper.stages])

    for stage in paper.stages:
        for sr in stage_rules(paper, stage, config, P_SEEDS, P_EXTRA):

            rule:
                name:
                    sr.name
                input:
                    unpack(sr.inputs(PCFG)),
                output:
                    **{k: directory(v) if stage.directory else v for k, v in sr.outputs().items()},
                params:
                    **sr.params(PCFG),
                wildcard_constraints:
                    **sr.constraints(paper),
                log:
                    f"logs/{sr.log(P)}.log",
                benchmark:
                    f"logs/benchmarks/{sr.log(P)}.tsv"
                threads: config["threads"] if stage.threads else 1
                priority: int(P_PRIORITY[stage.name])
                resources:
                    **stage_resources(paper, stage, PCFG, len(sr.seeds or [0])),
                conda:
                    "../../envs/replikit.yaml"
                script:
                    "../scripts/paper_stage.py"

    rule:
        name:
            f"{paper.prefix}_figure"
        input:
            unpack(paper.figure_inputs(PCFG, P_SEEDS)),
        output:
            figure=report(
                f"{P_RESULTS}/figures/{{figure}}.png",
                category=P,
                caption="../../reports/captions/figure.rst",
            ),
            table=f"{P_RESULTS}/tables/{{figure}}.csv",
            provenance=f"{P_RESULTS}/figures/{{figure}}.provenance.json",
        params:
            paper=P,
            cfg=PCFG,
            scale=SCALE_SHOWN,
            caption=lambda w, paper=paper: paper.figure(w.figure).caption,
            code=lambda w, paper=paper: CODE[paper.figure(w.figure).func.__module__],
        wildcard_constraints:
            figure="|".join(f.name for f in paper.figures),
        log:
            f"logs/{P}/figures/{{figure}}.log",
        benchmark:
            f"logs/benchmarks/{P}/figures/{{figure}}.tsv"
        resources:
            mem_mb=2000,
            runtime=10,
        conda:
            "../../envs/replikit.yaml"
        script:
            "../scripts/paper_figure.py"

    rule:
        name:
            f"{paper.prefix}_claims"
        input:
            **claim_inputs(paper, PCFG, P_SEEDS, P_FRESH, P_EARLIER),
            # the claims' registration (replikit.scoring.registration): a new entry judges them again
            **registration_input(ROOT, P),
        output:
            f"{P_RESULTS}/claims.json",
        params:
            paper=P,
            cfg=PCFG,
            seeds=P_SEEDS,
            fresh=P_FRESH,
            earlier=P_EARLIER,
            stats=config["stats"],
            settings=PAPER_SETTINGS[P],
            scale=SCALE,
            code=CODE[paper.claims.__module__],
            job_code=CLAIMS_JOB_CODE,
        log:
            f"logs/{P}/claims.log",
        benchmark:
            f"logs/benchmarks/{P}/claims.tsv"
        resources:
            mem_mb=2000,
            runtime=10,
        conda:
            "../../envs/replikit.yaml"
        script:
            "../scripts/paper_claims.py"
