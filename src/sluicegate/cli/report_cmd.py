"""``sluicegate report CONTRACT`` — the HTML report of a run (src/sluicegate/report/)."""

from __future__ import annotations

import click

from .common import (
    CONTEXT,
    contract_argument,
    examples,
    handled,
    logical_date_option,
    parse_vars,
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
@click.option("--run", "run_id", metavar="RUN_ID", help="Report this run (default: the newest).")
@var_option()
@logical_date_option()
@handled
@examples("sluicegate report contract.yml", "sluicegate report contract.yml --date 2024-01-31")
def report_cmd(
    contract: str,
    out: str | None,
    runs: int,
    run_id: str | None,
    variables: tuple[str, ...],
    logical_date: str | None,
) -> None:
    """Write one self-contained HTML report of CONTRACT's newest run (or --run ID).

    \b
    Verdict and ledger, rule failures with owners and the gate's bands, trend plots of
    every governed check, drift, freshness, the input binding, the DLQ by reason and
    status with a sample of rows, and the star schema's counts. The file opens offline
    (no script, style or font is fetched); it reads the warehouse's governed tables, so a
    DuckDB or a Spark warehouse gives the same page.
    """
    from ..api import load, report

    loaded = load(contract, vars=parse_vars(variables), logical_date=logical_date)
    path = report(loaded, out=out, runs=runs, run_id=run_id)
    CliConsole().line(f"report: {path}")
