# The report: scorecard of every claim, every figure with caption and provenance.


rule report:
    input:
        claims=CLAIMS,
        figures=FIGURES,
        benchmarks=BENCHMARKS,
        templates=[str(ROOT / "reports/report.html.j2"), str(ROOT / "reports/report.md.j2")],
    output:
        html="results/report/index.html",
        markdown="results/report/index.md",
        forests=[f"results/report/forest/{paper.name}.png" for paper in PAPERS],
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
