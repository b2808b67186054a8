"""The order a run starts its jobs in: the longest first, from the scale's published run."""

import json
from pathlib import Path

from replikit.plan.schedule import first_of_all, priority, stage_priorities, stage_seconds

PUBLISHED = Path(__file__).resolve().parents[1] / "docs" / "published"


def test_the_published_default_puts_the_longest_training_first():
    seconds = stage_seconds(PUBLISHED, "default")
    bm = priority(seconds, "benign_memorization", "train")
    cl = priority(seconds, "continual_learning", "train")
    assert bm > cl > 0
    assert bm == int(seconds["benign_memorization"]["train"])


def test_a_figure_an_untimed_stage_and_an_unpublished_scale_get_no_priority(tmp_path):
    seconds = stage_seconds(PUBLISHED, "default")
    assert priority(seconds, "benign_memorization", "figure") == 0
    assert priority(seconds, "a_paper_never_run", "train") == 0
    assert stage_seconds(tmp_path, "default") == {}


def test_a_per_seed_job_gets_its_share_of_its_stage_job(tmp_path):
    snap = {"runtime": {"per_paper": {"p": {"stage_longest_s": {"train": 500.0}}}}}
    (tmp_path / "scorecard-default.json").write_text(json.dumps(snap))
    seconds = stage_seconds(tmp_path, "default")
    assert priority(seconds, "p", "train") == 500
    assert priority(seconds, "p", "train", 1 / 5) == 100


def test_what_feeds_a_long_job_starts_with_it_and_datasets_come_first():
    seconds = {"p": {"data": 3.0, "train": 472.0, "benchmark": 4.0}, "q": {"train": 569.0}}
    assert stage_priorities(seconds, "p", ["data", "train", "benchmark"]) == {"data": 472, "train": 472,
                                                                            "benchmark": 4}
    assert first_of_all(seconds) == 570 and first_of_all({}) == 1
