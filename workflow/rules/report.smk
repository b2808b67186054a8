# The report: scorecard of every claim, every figure with caption and provenance.


rule benchmark_training_loop:
    input:
        **DATASET_FILES[config["benign_memorization"]["dataset"]],
    output:
        "results/benchmarks/training_loop.json",
    params:
        bench=config["benchmark"],
        model=config["benign_memorization"]["model"],
    log:
        "logs/benchmarks/training_loop.log",
    benchmark:
        "logs/benchmarks/training_loop.tsv"
    threads: config["threads"]
    resources:
        mem_mb=4000,
        runtime=30,
    conda:
        "../../envs/replikit.yaml"
    script:
        "../scripts/benchmark_training_loop.py"


rule report:
    input:
        claims=CLAIMS,
        figures=FIGURES,
        benchmarks=BENCHMARKS,
        templates=[str(ROOT / "reports/report.html.j2"), str(ROOT / "reports/report.md.j2")],
    output:
        html="results/report/index.html",
        markdown="results/report/index.md",
        forests=[f"results/report/forest/{Path(c).parent.name}.png" for c in CLAIMS],
    log:
        "logs/report.log",
    benchmark:
        "logs/benchmarks/report.tsv"
    resources:
        mem_mb=2000,
        runtime=10,
    conda:
        "../../envs/replikit.yaml"
    script:
        "../scripts/report.py"
