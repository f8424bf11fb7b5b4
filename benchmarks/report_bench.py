"""How big the HTML report is and how fast it is made and shown (docs/report.md).

Runs the packaged retail contract on ``--runs`` logical dates (a fresh generated feed each
day, so every trend has that many points), then measures:

* ``sluicegate.report`` wall time (collect + draw + render) and the file's size;
* the page in headless Chromium (Debian's, through Playwright): navigation to the load
  event and to the first contentful paint, from the Navigation/Paint Timing APIs,
  median of ``--loads`` fresh pages.

    .venv/bin/python benchmarks/report_bench.py --runs 30 --lines 2000
"""

from __future__ import annotations

import argparse
import json
import statistics
import tempfile
import time
from pathlib import Path

import sluicegate
from sluicegate.datagen.retail import generate
from sluicegate.demo import RETAIL_CONTRACT

FLAGS = ["--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run"]
FLAGS += ["--disable-background-networking", "--disable-component-update", "--disable-sync"]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--runs", type=int, default=10)
    ap.add_argument("--lines", type=int, default=2000)
    ap.add_argument("--loads", type=int, default=5)
    ap.add_argument("--chromium", default="/usr/bin/chromium")
    args = ap.parse_args()
    root = Path(tempfile.mkdtemp(prefix="sluicegate-report-bench-"))
    contract = root / "contract.yml"
    contract.write_text(RETAIL_CONTRACT.read_text(encoding="utf-8"), encoding="utf-8")
    base = {"warehouse": str(root / "warehouse.duckdb"), "export": str(root / "export")}
    for day in range(args.runs):
        feed = root / f"feed-{day}"
        generate(feed, args.lines, seed=day)
        date = f"2024-01-{day + 1:02d}" if day < 31 else f"2024-02-{day - 30:02d}"
        sluicegate.run(contract, vars={**base, "root": str(feed)}, logical_date=date)
    variables = {**base, "root": str(feed)}
    t = time.perf_counter()
    out = sluicegate.report(contract, out=root / "report.html", vars=variables)
    made = time.perf_counter() - t

    from playwright.sync_api import sync_playwright

    loads, paints = [], []
    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path=args.chromium, args=FLAGS)
        for _ in range(args.loads):
            page = browser.new_page(viewport={"width": 1280, "height": 900})
            page.goto(out.resolve().as_uri(), wait_until="load")
            timing = page.evaluate(
                """() => ({load: performance.getEntriesByType('navigation')[0].loadEventEnd,
                 fcp: (performance.getEntriesByName('first-contentful-paint')[0] || {}).startTime})"""
            )
            loads.append(timing["load"])
            paints.append(timing["fcp"] or 0.0)
            page.close()
        browser.close()
    print(
        json.dumps(
            {
                "runs": args.runs,
                "lines_per_run": args.lines,
                "report_seconds": round(made, 2),
                "bytes": out.stat().st_size,
                "charts": out.read_text(encoding="utf-8").count('class="chart"'),
                "load_ms_median": round(statistics.median(loads), 1),
                "first_contentful_paint_ms_median": round(statistics.median(paints), 1),
            },
            indent=2,
        )
    )


if __name__ == "__main__":
    main()
