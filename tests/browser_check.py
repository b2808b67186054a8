"""Open an HTML report in headless Chromium and read back what the browser rendered.

`check_report_in_browser(index)` copies the page next to itself with a small script injected that,
once every <img> has settled (loaded or failed), writes a JSON summary into the DOM: each image's
`complete` / `naturalWidth` / `alt`, and the text of every cell of every `table.scorecard` row.
`chromium --headless --dump-dom` prints that DOM; a second call saves a full-page screenshot.
"""

from __future__ import annotations

import html
import json
import os
import re
import shutil
import subprocess
from pathlib import Path

MARKER = "replikit-browser-check"
FIRST_SCREEN = (1280, 900)  # the viewport whose text `first_screen` holds: a laptop's window
PROBE = r"""
<script>
(function () {
  function settle(img) {
    if (img.complete) return Promise.resolve();
    return new Promise(function (ok) {
      img.addEventListener('load', ok);
      img.addEventListener('error', ok);
    });
  }
  function report() {
    var imgs = Array.prototype.slice.call(document.images);
    Promise.all(imgs.map(settle)).then(function () {
      var rows = Array.prototype.slice.call(document.querySelectorAll('table.scorecard tr'))
        .filter(function (r) { return r.querySelector('td'); })
        .map(function (r) {
          return Array.prototype.map.call(r.cells, function (c) { return c.textContent.trim(); });
        });
      // the text a reader sees before scrolling: every text node with a box in the first viewport
      var seen = [], walker = document.createTreeWalker(document.body, NodeFilter.SHOW_TEXT);
      while (walker.nextNode()) {
        var range = document.createRange();
        range.selectNodeContents(walker.currentNode);
        var box = range.getBoundingClientRect();
        if (box.height > 0 && box.top < window.innerHeight && box.bottom > 0) {
          seen.push(walker.currentNode.textContent);
        }
      }
      var out = {
        first_screen: seen.join(' ').replace(/\s+/g, ' '),
        images: imgs.map(function (i) {
          return {alt: i.alt, complete: i.complete, naturalWidth: i.naturalWidth,
                  naturalHeight: i.naturalHeight};
        }),
        scorecard_rows: rows,
        title: document.title
      };
      var pre = document.createElement('pre');
      pre.id = 'MARKER';
      pre.textContent = JSON.stringify(out);
      document.body.appendChild(pre);
    });
  }
  if (document.readyState === 'complete') report(); else window.addEventListener('load', report);
})();
</script>
""".replace("MARKER", MARKER)


def chromium() -> str | None:
    for name in ("chromium", "chromium-browser", "google-chrome", "google-chrome-stable"):
        path = shutil.which(name)
        if path:
            return path
    return None


def _run_browser(args: list[str], timeout: int = 120) -> subprocess.CompletedProcess:
    exe = chromium()
    if exe is None:
        raise FileNotFoundError("no chromium on PATH (Debian: apt-get install chromium)")
    flags = ["--headless", "--disable-gpu", "--no-sandbox", "--no-first-run", "--disable-extensions",
             "--hide-scrollbars", "--allow-file-access-from-files", "--virtual-time-budget=15000"]
    env = {**os.environ, "HOME": os.environ.get("HOME", "/tmp")}
    return subprocess.run([exe, *flags, *args], capture_output=True, text=True, timeout=timeout, env=env)


def render(index: Path) -> dict:
    """What Chromium saw on `index`: images (complete, naturalWidth), scorecard row cells, and the
    text of the first screen (a FIRST_SCREEN viewport, whitespace collapsed)."""
    index = Path(index).resolve()
    page = index.read_text(encoding="utf-8")
    probe_page = index.with_name(f".{index.stem}.{MARKER}.html")
    at = page.rfind("</body>")
    probe_page.write_text(page[:at] + PROBE + page[at:] if at >= 0 else page + PROBE, encoding="utf-8")
    try:
        res = _run_browser([f"--window-size={FIRST_SCREEN[0]},{FIRST_SCREEN[1]}", "--dump-dom",
                            probe_page.as_uri()])
    finally:
        probe_page.unlink(missing_ok=True)
    m = re.search(rf'<pre id="{MARKER}">(.*?)</pre>', res.stdout, re.S)
    if res.returncode != 0 or m is None:
        raise RuntimeError(f"chromium did not render {index} (exit {res.returncode}):\n"
                           f"{res.stderr[-3000:]}\n{res.stdout[-1000:]}")
    return json.loads(html.unescape(m.group(1)))


def screenshot(index: Path, out: Path, width: int = 1280, height: int = 6000) -> Path:
    res = _run_browser([f"--screenshot={Path(out).resolve()}", f"--window-size={width},{height}",
                        Path(index).resolve().as_uri()])
    if res.returncode != 0 or not Path(out).exists():
        raise RuntimeError(f"chromium screenshot failed (exit {res.returncode}):\n{res.stderr[-3000:]}")
    return Path(out)


def scorecards(results: Path) -> list[Path]:
    """The scorecards under `results`, on each paper's own data and on others (the report's sections)."""
    from replikit.reporting.report import scorecards_in

    return scorecards_in(Path(results))


def claim_ids(results: Path) -> list[str]:
    """Every claim id of every paper's claims.json under `results` (results/<paper>/claims.json, and
    results/<paper>/on-<dataset>/claims.json on another dataset)."""
    ids = []
    for card in scorecards(results):
        ids += [c["id"] for c in json.loads(card.read_text())["claims"]]
    return ids


def first_screen_lines(paper: dict) -> list[str]:
    """What a paper puts on the report's first screen: its title and its line of verdict counts
    (`replikit.reporting.report.paper_lines`), and the sentence on the scale that ran."""
    from replikit.reporting.report import SCALE_TEXT, paper_lines

    (line,) = paper_lines([paper])
    scale = [SCALE_TEXT[paper["scale"]]] if paper["scale"] in SCALE_TEXT else []
    return [line["title"], line["line"], *scale]


def check_report_in_browser(index: Path, screenshot_name: str = "screenshot.png") -> dict:
    """Assert, in a real browser, that every image of the report loaded, that the scorecard has
    exactly one row per claim of the results/<paper>/claims.json files next to it, and that the first
    screen shows each paper's title, its verdict counts and the scale's sentence; save a screenshot
    under the report's folder. Returns what the browser saw (plus the screenshot path)."""
    index = Path(index)
    seen = render(index)
    images = seen["images"]
    assert images, f"{index}: no <img> at all"
    broken = [i["alt"] for i in images if not (i["complete"] and i["naturalWidth"] > 0)]
    assert not broken, f"{index}: images that did not load in Chromium: {broken}"

    results = index.resolve().parent.parent  # results/report/index.html -> results/
    ids = claim_ids(results)
    assert ids, f"no claims.json under {results}"
    rows = seen["scorecard_rows"]
    assert len(rows) == len(ids), f"scorecard has {len(rows)} rows for {len(ids)} claims"
    for cid in ids:  # one row per section that has the claim (two datasets of a paper: two rows)
        matching = [r for r in rows if cid in r]
        assert len(matching) == ids.count(cid), f"claim {cid}: {len(matching)} scorecard rows"

    first = seen["first_screen"]
    from replikit.reporting import report

    for card in scorecards(results):  # what the report's first screen promises, per section
        paper = json.loads(card.read_text())
        paper["paper"] = report.section_of(paper["paper"], card)  # "<paper>@<dataset>" on another dataset
        for line in first_screen_lines(paper):
            assert " ".join(line.split()) in first, f"not on the report's first screen: {line!r}"

    figures = sorted(p.stem for c in scorecards(results) for p in c.parent.glob("figures/*.png"))
    alts = {i["alt"] for i in images}
    missing = [f for f in figures if f not in alts]
    assert not missing, f"figures without an <img> in the report: {missing}"
    seen["screenshot"] = str(screenshot(index, index.parent / screenshot_name))
    return seen
