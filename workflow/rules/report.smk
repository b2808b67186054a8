# The report: scorecard of every claim, every figure with caption and provenance, and (config key
# report.cost_plan) the cost of the paper scale.
from replikit.papers import paper_names
from replikit.reporting.report import earlier_papers, earlier_sections, section_figures, section_in_tree

# The plan of config/paper.yaml for the enabled papers, whatever scale runs (replikit.plan.bill): its
# own target, results/plan/paper_scale.json, always; the report's "Cost of the paper scale" only with
# report.cost_plan (about 10 minutes on one core, so no scale's `all` waits for it by default).
PLAN_FILE = "results/plan/paper_scale.json"
COST_PLAN = PLAN_FILE if config["report"]["cost_plan"] else None


rule cost_plan:
    input:
        config=str(ROOT / "config/paper.yaml"),
        base=str(ROOT / "config/config.yaml"),
        papers=[str(ROOT / f"config/papers/{paper.name}.yaml") for paper in PAPERS],
        profile=str(ROOT / "profiles/gpu/config.yaml"),
    output:
        PLAN_FILE,
    params:
        papers=config["papers"],
        source="config/paper.yaml",
        accelerators=["H100", "A100", "V100"],
    log:
        "logs/plan/paper_scale.log",
    benchmark:
        "logs/benchmarks/plan/paper_scale.tsv"
    resources:
        mem_mb=5000,  # measured: 3.5 GB max RSS for every paper of config/paper.yaml
        runtime=40,
    threads: 1
    conda:
        "../../envs/replikit.yaml"
    script:
        "../scripts/cost_plan.py"


# The scale ladders summarized so far (python -m replikit.plan.ladder summary <paper> [--ladder NAME]):
# the report's "Ladder" section, a paper's main ladder (results/ladder/<paper>/) before its others
# (results/ladder/<paper>.<name>/). Found when the workflow is parsed; a rung's own output tree has none.
LADDERS = [
    str(p)
    for paper in PAPERS
    for p in [Path(f"results/ladder/{paper.name}/ladder.json"),
              *sorted(Path("results/ladder").glob(f"{paper.name}.*/ladder.json"))]
    if p.is_file()
]


# The scorecards in this tree that this call does not make (an earlier call's: on another dataset, or
# of a paper this call leaves out) and their figures: the report shows them too, each marked, so that a
# call of one paper replaces only its own section (replikit.reporting.report.earlier_sections).
EARLIER_CLAIMS = earlier_sections(CLAIMS, scale=SCALE)
SHOWN_CLAIMS = CLAIMS + EARLIER_CLAIMS
# Today's code hash of every shown section's modules, an earlier call's papers too: the report flags
# a section whose runs older code computed.
REPORT_CODE = {**code_hashes(get(p) for p in earlier_papers(EARLIER_CLAIMS) if p in paper_names()), **CODE}


rule report:
    input:
        claims=SHOWN_CLAIMS,
        earlier=EARLIER_CLAIMS,
        figures=FIGURES + section_figures(EARLIER_CLAIMS),
        benchmarks=BENCHMARKS,
        cost_plan=[COST_PLAN] if COST_PLAN else [],
        ladders=LADDERS,
        templates=[str(ROOT / "reports/report.html.j2"), str(ROOT / "reports/report.md.j2")],
    output:
        html="results/report/index.html",
        markdown="results/report/index.md",
        forests=[f"results/report/forest/{section_in_tree(c)}.png" for c in SHOWN_CLAIMS],
    params:
        code=REPORT_CODE,
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
