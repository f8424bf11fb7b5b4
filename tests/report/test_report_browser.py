"""The retail demo's report opened in a real headless Chromium (Debian's ``chromium``,
driven by Playwright with ``executable_path``): nothing leaves the file, nothing logs an
error, and every chart is drawn — with the numbers of the runs, checked against the feed
and the warehouse, not against the report's own data.

``make browser`` installs chromium; under CI a missing browser fails this test instead of
skipping it. ``SLUICEGATE_SCREENSHOT=path`` also saves the page's first screen there (``make
report-screenshot`` refreshes docs/report-retail.png with it).
"""

from __future__ import annotations

import os
from pathlib import Path

import duckdb
import pytest

import sluicegate

CHROMIUM = os.environ.get("SLUICEGATE_CHROMIUM", "/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]

pytestmark = pytest.mark.slow


def _chromium() -> str:
    if Path(CHROMIUM).is_file():
        return CHROMIUM
    message = f"no Chromium at {CHROMIUM}: run `make browser` (apt-get install -y chromium)"
    if os.environ.get("CI"):
        pytest.fail(message)  # CI installs it (make test depends on make browser)
    pytest.skip(message)


def _raw_records(feed: Path) -> int:
    """Non-blank lines of the sales files: the ledger's raw side, counted by hand."""
    return sum(
        1
        for f in sorted((feed / "sales").rglob("*.json"))
        for line in f.read_text(encoding="utf-8").splitlines()
        if line.strip()
    )


def test_report_in_headless_chromium(retail_runs, tmp_path: Path) -> None:
    from playwright.sync_api import sync_playwright

    chromium = _chromium()
    out = sluicegate.report(
        retail_runs.contract, out=tmp_path / "report.html", vars=retail_runs.vars
    )
    last = retail_runs.last
    url = out.resolve().as_uri()

    requests: list[str] = []
    blocked: list[str] = []
    errors: list[str] = []
    with sync_playwright() as p:
        context = p.chromium.launch_persistent_context(
            str(tmp_path / "profile"),  # a fresh user-data-dir
            executable_path=chromium,
            headless=True,
            args=FLAGS,
            viewport={"width": 1280, "height": 900},
        )
        try:

            def guard(route, request) -> None:  # noqa: ANN001 - Playwright's objects
                if request.url == url:
                    route.continue_()
                else:
                    blocked.append(request.url)
                    route.abort()

            context.route("**/*", guard)
            page = context.new_page()
            page.on("request", lambda r: requests.append(r.url))
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda e: errors.append(str(e)))
            page.goto(url, wait_until="load")
            charts = page.eval_on_selector_all(
                "figure.chart",
                """figs => figs.map(f => {
                    const svg = f.querySelector('svg');
                    const box = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
                    const drawn = svg ? [...svg.querySelectorAll('path, rect, use')]
                        .filter(e => { const b = e.getBoundingClientRect();
                                       return b.width > 0 || b.height > 0; }).length : 0;
                    return {name: f.dataset.chart, points: f.dataset.points,
                            width: box.width, height: box.height, drawn,
                            markers: svg ? svg.querySelectorAll('g[id^="points-"] use').length : 0,
                            text: svg ? [...svg.querySelectorAll('text')]
                                .map(t => t.textContent).join('\\n') : ''};
                })""",
            )
            verdict = page.inner_text("#verdict")
            shot = tmp_path / "report.png"
            page.screenshot(path=str(shot), full_page=True)
            if os.environ.get("SLUICEGATE_SCREENSHOT"):  # the first screen, for docs/
                page.set_viewport_size({"width": 1280, "height": 1100})
                page.screenshot(path=os.environ["SLUICEGATE_SCREENSHOT"])
        finally:
            context.close()

    assert requests == [url], f"requests left the file: {requests}"
    assert not blocked and not errors, (blocked, errors)
    assert verdict.lower() == last.status
    assert shot.stat().st_size > 50_000  # a real page, not a blank one

    by_name = {c["name"]: c for c in charts}
    for c in charts:
        assert c["width"] > 100 and c["height"] > 50 and c["drawn"] > 3, c

    # the ledger picture: the run's numbers, reconciled with the feed and the warehouse
    led = last.ledger
    assert led.raw == _raw_records(retail_runs.feeds[-1])
    with duckdb.connect(retail_runs.vars["warehouse"], read_only=True) as con:
        clean = con.execute(
            "SELECT COUNT(*) FROM sales_clean WHERE _run_id = ?", [last.run_id]
        ).fetchone()[0]
    assert clean == last.metrics["clean_published"] == led.clean
    text = by_name["ledger"]["text"]
    for label, n in (
        ("raw", led.raw),
        ("clean", led.clean),
        ("quarantined", led.quarantined),
        ("duplicates", led.duplicates),
    ):
        assert f"{label} {n:,}" in text, (label, n, text)

    # rule failures: every rule's count, with its owner, on the bar chart
    text = by_name["rules"]["text"]
    for name, rule in last.metrics["rules"].items():
        assert f"{name} · {rule['owner']}" in text
        assert f" {rule['failed']:,} (" in text

    # trends: one chart per governed check with a number, a marker per run, newest labelled
    trends = {n.split(":", 1)[1]: c for n, c in by_name.items() if n.startswith("trend:")}
    for check in ("quarantine_share", "invalid_share", "source_available", "rule:known_product"):
        assert trends[check]["points"] == "3" and trends[check]["markers"] == 3, trends[check]
    share = next(f for f in last.facts if f["check_id"] == "quarantine_share")["metric"]
    assert f"{float(share):.4g}" in trends["quarantine_share"]["text"]
