"""``sluicegate report CONTRACT`` — the HTML report of a run (src/sluicegate/report/)."""

from __future__ import annotations

import click

from .common import (
    CONTEXT,
    contract_argument,
    examples,
    handled,
    json_option,
    logical_date_option,
    parse_vars,
    run_option,
    var_option,
)
from .console import CliConsole

#: seed 001's window; compile/dashboard.py's TREND_RUNS (repeated: the CLI loads no sqlglot)
TREND_RUNS = 90


@click.command("report", context_settings=CONTEXT)
@contract_argument
@click.option(
    "--out",
    "out",
    type=click.Path(dir_okay=False),
    help="Where to write the HTML file (default: report.html beside the run metrics).",
)
@click.option(
    "--runs",
    type=click.IntRange(1, 10_000),
    default=TREND_RUNS,
    show_default=True,
    help="Trend plots show the last N runs of every governed check.",
)
@run_option("Report this run (default: the newest).")
@var_option()
@logical_date_option()
@json_option('Print {"status", "path", "run_id", …} as JSON (the page is still written).')
@handled
@examples(
    "sluicegate report contract.yml",
    "sluicegate report contract.yml --date 2024-01-31 --out quality.html",
    "sluicegate report contract.yml --json | jq -r .path",
)
def report_cmd(
    contract: str,
    out: str | None,
    runs: int,
    run_id: str | None,
    variables: tuple[str, ...],
    logical_date: str | None,
    as_json: bool = False,
) -> None:
    """Write one self-contained HTML report of CONTRACT's newest run (or --run ID).

    Verdict and ledger, rule failures with owners and the gate's bands, trend plots of
    every governed check, drift, freshness, the input binding, the DLQ by reason and
    status with a sample of rows, and the star schema's counts. The file opens offline
    (no script, style or font is fetched); it reads the warehouse's governed tables, so a
    DuckDB or a Spark warehouse gives the same page.
    """
    from pathlib import Path

    from ..api import load
    from ..report.build import build_report
    from .common import write_out
    from .present import emit_json, norm_path

    loaded = load(contract, vars=parse_vars(variables), logical_date=logical_date)
    if out is not None:  # an unwritable --out is exit 2 before the warehouse is read
        write_out(out, None)
    path, data = build_report(
        loaded, out=None if out is None else Path(out), runs=runs, run_id=run_id
    )
    if as_json:
        m = data.metrics
        emit_json(
            {
                "status": "ok",
                "contract": data.contract,
                "path": str(path),
                "bytes": path.stat().st_size,
                "run_id": m.get("run_id"),
                "logical_date": m.get("logical_date"),
                "run_status": m.get("status"),
                "runs_in_trend": data.runs_in_trend,
            },
            loaded.redactor,
        )
        return
    CliConsole().line(f"report: {norm_path(path)}")
