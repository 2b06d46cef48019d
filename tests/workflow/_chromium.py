"""Drive a Snakemake HTML report in headless Chromium, as a reader would: click through its menu, then list what
the page shows (headings, table cells, captions, and the data URIs of the images and frames it displays)."""

from __future__ import annotations

import html
import json
import re
import shutil
import subprocess
from pathlib import Path

# Chromium's Debian package installs `chromium`; other distributions name it differently.
CHROMIUM = next((shutil.which(n) for n in ("chromium", "chromium-browser", "google-chrome") if shutil.which(n)), None)
FLAGS = ("--headless", "--no-sandbox", "--disable-gpu", "--virtual-time-budget=30000")

# Appended to a copy of the report: after the app has rendered, clicks each step in turn (a menu entry by its
# text, or `row:<cell>:<n>`, the n-th link of the results row holding that cell: 0 views, 1 shows the caption),
# then writes what is shown as JSON into <pre id="nodedp-probe">.
_DRIVER = r"""
<script>
(function () {
  const steps = __STEPS__;
  const log = [];
  function menuEntry(text) {
    const hits = [...document.querySelectorAll('#app a, #app button, #app li, #app span, #app div, #app td')]
      .filter(el => el.textContent.trim() === text);
    return hits.length ? hits[hits.length - 1] : null;
  }
  function rowLink(cell, n) {
    const td = [...document.querySelectorAll('#app td')].find(d => d.textContent.trim() === cell);
    return td ? td.closest('tr').querySelectorAll('a')[n] || null : null;
  }
  function probe() {
    const shown = [...document.querySelectorAll('#app h1, #app h2, #app h3, #app th, #app td, #app a, #app p, ' +
                                                '#app img, #app iframe')]
      .map(el => ({tag: el.tagName.toLowerCase(),
                   text: (el.tagName === 'IMG' || el.tagName === 'IFRAME') ? (el.getAttribute('src') || '')
                         : el.textContent.trim()}));
    const out = document.createElement('pre');
    out.id = 'nodedp-probe';
    out.textContent = JSON.stringify({log: log, shown: shown});
    document.body.appendChild(out);
  }
  let i = 0;
  function next() {
    if (i === steps.length) { probe(); return; }
    const step = steps[i++];
    const parts = step.split(':');
    const el = parts[0] === 'row' ? rowLink(parts[1], Number(parts[2])) : menuEntry(step);
    log.push((el ? 'clicked ' : 'missing ') + step);
    if (el) { (el.closest('a, button') || el).click(); }
    setTimeout(next, 700);
  }
  setTimeout(next, 2000);
})();
</script>
"""


def _driven(report: Path, steps: list[str], work: Path) -> Path:
    source = report.read_text(encoding="utf-8")
    end = source.rfind("</body>")  # the last one: the report's scripts hold the string too
    driven = work / f"driven-{len(list(work.glob('driven-*.html')))}.html"
    driven.write_text(source[:end] + _DRIVER.replace("__STEPS__", json.dumps(steps)) + source[end:], encoding="utf-8")
    return driven


def browse(report: Path, steps: list[str], work: Path) -> dict:
    """{"log": [clicked/missing per step], "shown": [{"tag", "text"}, ...]} after clicking ``steps``."""
    driven = _driven(report, steps, work)
    result = subprocess.run(
        [CHROMIUM, *FLAGS, "--dump-dom", driven.resolve().as_uri()],
        capture_output=True,
        text=True,
        timeout=180,
        check=False,
    )
    found = re.search(r'<pre id="nodedp-probe">(.*?)</pre>', result.stdout, re.S)
    if found is None:
        raise AssertionError(
            f"the report did not render in Chromium (exit {result.returncode}): {result.stderr[-2000:]}"
        )
    return json.loads(html.unescape(found.group(1)))


def screenshot(report: Path, steps: list[str], work: Path, out: Path) -> Path:
    """A PNG screenshot (1400×1000) of the report after clicking ``steps``."""
    driven = _driven(report, steps, work)
    subprocess.run(
        [CHROMIUM, *FLAGS, "--window-size=1400,1000", f"--screenshot={out}", driven.resolve().as_uri()],
        capture_output=True,
        text=True,
        timeout=180,
        check=True,
    )
    return out
