# Shared configuration for all rule files: seeds, scale, the enabled papers and their targets.
from replikit.core.config import ConfigError, load_config
from replikit.data.datasets import names as dataset_names
from replikit.scoring.fidelity import paper_settings
from replikit.papers.registry import check_experiments, code_hashes, config_errors, data_errors, get
from replikit.reporting.provenance import code_hash
from replikit.papers.interface import prepared_files
from replikit.data.freshness import prepared_key
from replikit.plan.schedule import first_of_all, stage_priorities, stage_seconds
from replikit.scoring.registration import registration_input
from replikit.papers.glue import (
    claim_inputs,
    earlier_seeds,
    earlier_seeds_errors,
    extra_seeds,
    fresh_seeds,
    fresh_seeds_errors,
    results_dir,
    seen_seeds_errors,
    stage_resources,
    stage_rules,
)

SEEDS = config["seeds"]
SCALE = config["scale"]
# Each stage's longest job in the scale's published run: the longest start first (replikit.plan.schedule).
STAGE_SECONDS = stage_seconds(ROOT.joinpath("docs", "published"), SCALE)
# What a figure's banner calls its settings: the scale, and the ladder rung when these are one's.
SCALE_SHOWN = SCALE + (f" + ladder rung {config['ladder_rung']}" if config.get("ladder_rung") else "")
# The enabled papers' declarations (replikit.papers.interface), imported and checked here (only
# these; two with one rule prefix are a DeclarationError); papers.smk generates their rules.
PAPERS = [check_experiments(get(name), config[name]) for name in config["papers"]]
# config keys <paper>.fresh_seeds (seeds none of the paper's runs used), <paper>.earlier_seeds (not
# the paper's seeds) and <paper>.seen_seeds, each naming the paper's own claims.
FRESH_ERRORS = [e for paper in PAPERS for e in fresh_seeds_errors(paper, config) + earlier_seeds_errors(paper, config)
                + seen_seeds_errors(paper, config)]
if FRESH_ERRORS:
    raise ConfigError("invalid configuration:\n  " + "\n  ".join(FRESH_ERRORS))
# Every dataset rule prepare_dataset can make: the built-in ones and those the enabled papers declare.
DATASETS = dataset_names()
# The datasets this run reads, checked against their declarations before any job: a local file whose
# md5 is not the declared one, or a user's own file in no search path, stops the run here.
DATA_ERRORS = data_errors(config, PAPERS)
if DATA_ERRORS:
    raise ConfigError("the data is not as declared:\n  " + "\n  ".join(DATA_ERRORS))
# Rule-name prefix of each paper's rules (bm_train, ...): the time-limit hint names its config key.
RULE_PREFIXES = {paper.prefix: paper.name for paper in PAPERS}
# The papers' own settings: every scorecard row lists how this run departs from them.
PAPER_CONFIG = load_config(
    ROOT / "config/paper.yaml",
    ROOT / "workflow/schemas/config.schema.yaml",
    lambda c: config_errors(c, config["papers"]),
)
PAPER_SETTINGS = {
    p.name: paper_settings(PAPER_CONFIG, p.name, p.departures, p.unverified, p.figure_only)
    for p in PAPERS
}
# Today's hash of the code that computes each paper's results (module -> hash, replikit.reporting.provenance):
# a change reruns the figures and scorecards it computes, and the report flags runs it computed before.
CODE = code_hashes(PAPERS)
# ... and of the claims job's own code (replikit.papers.glue.score_claims and what it imports: seed sets,
# quotes, the scorecard's format), so a change there judges every paper's claims again.
CLAIMS_JOB_CODE = code_hash("replikit.papers.glue")
# Each paper's folder of figures, tables and scorecard: results/<paper>, or results/<paper>/on-<dataset>
# on a dataset other than its block's own, so two datasets never share one (glue.results_dir).
RESULTS = {paper.name: results_dir(config, paper) for paper in PAPERS}
TARGETS = [t for paper in PAPERS for t in paper.targets(RESULTS[paper.name])]
CLAIMS = [f"{RESULTS[paper.name]}/claims.json" for paper in PAPERS]
FIGURES = [t for t in TARGETS if t.endswith(".png")]
# Throughput records the report lists: each paper's benchmark stages.
BENCHMARKS = [p for paper in PAPERS for s in paper.stages if s.benchmark for p in s.outputs.values()]
