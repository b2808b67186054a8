"""The HTML report in a real browser (headless Chromium): every figure image loaded
(naturalWidth > 0), one scorecard row per claim of the claims.json files, and a screenshot saved
under results/report/.

The checker (tests/browser_check.py) is first shown to catch what it is for on small pages, then
run on a real report: the one of the continual-learning test DAG (tests/slurm_support.py, shared
with the SLURM comparison), or any built report named by REPLIKIT_REPORT (e.g. the smoke run's
results/report/index.html).
"""

from __future__ import annotations

import base64
import json
import os
import struct
import zlib
from pathlib import Path

import pytest

from tests.browser_check import check_report_in_browser, chromium, claim_ids, first_screen_lines
from tests.slurm_support import IN_CI, local_report, shared_root

pytestmark = pytest.mark.skipif(chromium() is None and not IN_CI,
                                reason="no chromium (Debian: apt-get install chromium; .ci/slurm_cluster.sh "
                                       "installs it)")


def png(width: int, height: int) -> bytes:
    """A valid grey PNG of the given size (no imaging library needed)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
    raw = b"".join(b"\x00" + b"\x80" * width for _ in range(height))
    return (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", width, height, 8, 0, 0, 0, 0))
            + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b""))


def fake_report(root: Path, rows: list[str], claims: list[str], images: dict[str, bytes],
                above_the_fold: str = "") -> Path:
    """A report page and its claims.json. Its first screen shows the paper's title, counts and scale
    sentence after `above_the_fold` (HTML; a tall block pushes them off the first screen)."""
    (root / "results/paper/figures").mkdir(parents=True)
    (root / "results/report").mkdir(parents=True)
    card = {"paper": "paper", "title": "A Toy Paper (Doe et al., 2026)", "scale": "smoke", "seeds": [0, 1],
            "claims": [{"id": c, "kind": "paper", "verdict": "inconclusive"} for c in claims]}
    (root / "results/paper/claims.json").write_text(json.dumps(card))
    top = above_the_fold + "".join(f"<p>{line}</p>" for line in first_screen_lines(card))
    for name in images:
        (root / f"results/paper/figures/{name}.png").write_bytes(png(4, 4))
    imgs = "".join(f'<figure><img src="data:image/png;base64,{base64.b64encode(data).decode()}" alt="{name}">'
                   "</figure>" for name, data in images.items())
    table = "".join(f"<tr><td>paper</td><td>{r}</td><td>statement</td></tr>" for r in rows)
    index = root / "results/report/index.html"
    index.write_text(f'<!DOCTYPE html><html><head><meta charset="utf-8"><title>t</title></head><body>{top}'
                     '<table class="scorecard"><tr><th>paper</th><th>claim</th><th>s</th></tr>'
                     f"{table}</table>"
                     f"{imgs}</body></html>")
    return index


def test_checker_passes_a_good_page_and_saves_a_screenshot(tmp_path):
    index = fake_report(tmp_path, ["X-1", "X-2"], ["X-1", "X-2"], {"fig_a": png(30, 20), "fig_b": png(8, 8)})
    seen = check_report_in_browser(index)
    assert [(i["alt"], i["naturalWidth"]) for i in seen["images"]] == [("fig_a", 30), ("fig_b", 8)]
    shot = Path(seen["screenshot"])
    assert shot.parent == index.parent and shot.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"


@pytest.mark.parametrize("rows, claims, images, message", [
    (["X-1"], ["X-1"], {"fig_a": b"not a png"}, "did not load"),
    (["X-1"], ["X-1", "X-2"], {"fig_a": png(8, 8)}, "1 rows for 2 claims"),
    (["X-1", "X-1"], ["X-1", "X-2"], {"fig_a": png(8, 8)}, "claim X-1: 2 scorecard rows"),
])
def test_checker_catches_broken_images_and_missing_or_duplicate_rows(tmp_path, rows, claims, images, message):
    index = fake_report(tmp_path, rows, claims, images)
    with pytest.raises(AssertionError, match=message):
        check_report_in_browser(index)


def test_checker_fails_when_the_papers_are_not_on_the_first_screen(tmp_path):
    index = fake_report(tmp_path, ["X-1"], ["X-1"], {"fig_a": png(8, 8)},
                        above_the_fold='<div style="height: 2000px">a long preamble</div>')
    with pytest.raises(AssertionError, match="not on the report's first screen: 'A Toy Paper"):
        check_report_in_browser(index)


@pytest.mark.slow  # builds the continual-learning test DAG and its report locally (minutes)
def test_built_report_in_headless_chromium(tmp_path_factory):
    """A real report: REPLIKIT_REPORT if set, else the continual-learning test DAG's (shared with the
    SLURM test's local reference run), built here."""
    index = (Path(os.environ["REPLIKIT_REPORT"]) if os.environ.get("REPLIKIT_REPORT")
             else local_report(shared_root(tmp_path_factory)))
    seen = check_report_in_browser(index)
    figures = [i for i in seen["images"] if not i["alt"].startswith("forest")]
    assert len(figures) >= 4 and all(i["naturalWidth"] > 100 for i in figures), figures
    assert len(seen["scorecard_rows"]) == len(claim_ids(index.parent.parent)) > 0
    assert Path(seen["screenshot"]).stat().st_size > 10_000
