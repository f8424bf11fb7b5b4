"""``sluicegate facts latest|trend|attention CONTRACT`` — the dashboard queries, from a terminal.

The queries are the objects in ``compile/dashboard.py``: this command runs the DuckDB
rendering on the contract's warehouse (read-only, waiting briefly while a run publishes),
or prints the SQL for another dialect (``--sql --dialect trino``) so a team can put the
same query on its own dashboard.
"""

from __future__ import annotations

import datetime as dt
import json
from typing import Any

import click

from ..errors import UsageError
from .common import CONTEXT, contract_argument, json_option, logical_date_option, var_option
from .common import handled as _handled
from .common import jsonable as _jsonable
from .common import parse_vars as _vars
from .console import CliConsole

#: How long a reader waits for a run's publish transaction to release the warehouse.
READ_WAIT_SECONDS = 30.0
#: compile/dashboard.py's QUERIES and TREND_RUNS, repeated so that loading the CLI does not
#: import sqlglot (a test pins them equal).
QUERIES = ("latest", "trend", "attention")
TREND_RUNS = 90


def _show(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, dt.datetime):
        return v.isoformat(sep=" ", timespec="seconds")
    return str(v)


@click.command("facts", context_settings=CONTEXT)
@click.argument("query", type=click.Choice((*QUERIES, "ledger")))
@contract_argument
@click.option(
    "--check",
    "check_id",
    metavar="CHECK_ID",
    help="trend: only this check (quarantine_share, rule:NAME, builtin:corrupt_record, …).",
)
@click.option(
    "--runs",
    type=click.IntRange(1, 10_000),
    default=TREND_RUNS,
    show_default=True,
    help="trend: the last N runs of each check.",
)
@click.option(
    "--limit", type=click.IntRange(1, 100_000), help="At most N rows (each query is bounded)."
)
@json_option()
@click.option("--sql", "as_sql", is_flag=True, help="Print the query text instead of running it.")
@click.option(
    "-d",
    "--dialect",
    default="duckdb",
    show_default=True,
    help="Dialect of --sql: duckdb, spark, trino, or any sqlglot dialect.",
)
@click.option(
    "--wait",
    "wait_seconds",
    type=float,
    default=READ_WAIT_SECONDS,
    show_default=True,
    help="Seconds to wait while a run holds the warehouse to publish.",
)
@var_option()
@logical_date_option()
@_handled
def facts(
    query: str,
    contract: str,
    check_id: str | None,
    runs: int,
    limit: int | None,
    as_json: bool,
    as_sql: bool,
    dialect: str,
    wait_seconds: float,
    variables: tuple[str, ...],
    logical_date: str | None,
) -> None:
    """Quality facts of CONTRACT: QUERY is latest, trend or attention.

    \b
      latest     the newest fact of every check, worst first
      trend      the last 90 runs of every check (--check one, --runs N)
      attention  warn/fail facts with owner, thresholds and metric, and DLQ rows
                 waiting per reason (status quarantined or fixed)
      ledger     raw = clean + withheld + duplicates + DLQ statuses, per run (each
                 micro-batch) and in total; exit 3 if it does not balance

    \b
    --sql prints the SELECT (bounded by LIMIT) for --dialect trino|spark|duckdb|…;
    otherwise it runs on the contract's warehouse, read-only: it works while a run is
    going and waits up to --wait seconds during the run's short publish transaction.
    """
    from sqlglot.dialects import Dialect
    from sqlglot.errors import UnsupportedError

    from ..compile import dashboard
    from ..compile.contract_check import load_contract
    from ..compile.render import render

    loaded = load_contract(contract, variables=_vars(variables), logical_date=logical_date)
    c = loaded.contract
    if query == "ledger":  # the cumulative ledger, per micro-batch and in total (cli/ledger_cmd.py)
        from .ledger_cmd import facts_ledger

        return facts_ledger(loaded, as_json=as_json, wait_seconds=wait_seconds)
    if as_sql:
        try:
            Dialect.get_or_raise(dialect)
        except ValueError as exc:
            raise UsageError(f"unknown dialect '{dialect}': {exc}") from None
        q = dashboard.build(
            query,
            c.outputs.facts,
            c.name,
            quarantine=c.outputs.quarantine,
            dlq_status=_dlq_status_of(loaded, wait_seconds, default=True),
            check_id=check_id,
            runs=runs,
            limit=limit,
        )
        try:
            text = render(q.query, dialect, pretty=True)
        except UnsupportedError as exc:
            raise UsageError(f"the {dialect} dialect cannot express this query: {exc}") from None
        click.echo(text + ";")
        return
    columns, rows, where = run_query(
        loaded, query, check_id=check_id, runs=runs, limit=limit, wait_seconds=wait_seconds
    )
    if as_json:
        doc = {
            "contract": c.name,
            "query": query,
            "warehouse": where,
            "columns": columns,
            "rows": rows,
        }
        click.echo(loaded.redactor(json.dumps(doc, indent=2, default=_jsonable)))
        return
    con = CliConsole()
    if not rows:
        con.line(
            "nothing needs attention" if query == "attention" else f"no facts for '{c.name}' yet"
        )
        return
    con.table(
        f"{query} facts of {c.name} ({where})",
        columns,
        [[loaded.redactor(_show(r[k])) for k in columns] for r in rows],
    )


def _open_reader(loaded: Any, wait_seconds: float) -> tuple[Any, str]:
    from .reader import open_reader

    return open_reader(loaded, wait_seconds)


def _dlq_status_of(loaded: Any, wait_seconds: float, *, default: bool) -> bool:
    """Does the quarantine table track ``_dlq_status``? Asked of the warehouse if it exists."""
    from ..workspace import Workspace

    if not Workspace(loaded).exists():
        return default
    eng, _path = _open_reader(loaded, wait_seconds)
    try:
        q = loaded.contract.outputs.quarantine
        if not eng.table_exists(q):
            return default
        return "_dlq_status" in {n for n, _t in eng.columns(q)}
    finally:
        eng.close()


def run_query(
    loaded: Any,
    query: str,
    *,
    check_id: str | None = None,
    runs: int = TREND_RUNS,
    limit: int | None = None,
    wait_seconds: float = READ_WAIT_SECONDS,
) -> tuple[list[str], list[dict[str, Any]], str]:
    """Run one dashboard query on the contract's warehouse: (columns, rows, warehouse)."""
    from ..compile import dashboard

    c = loaded.contract
    eng, path = _open_reader(loaded, wait_seconds)
    try:
        if not eng.table_exists(c.outputs.facts):
            raise UsageError(
                f"the warehouse {path} has no facts table '{c.outputs.facts}' yet",
                hint="run the contract first: sluicegate run CONTRACT",
            )
        quarantine = c.outputs.quarantine if eng.table_exists(c.outputs.quarantine) else None
        dlq_status = quarantine is not None and "_dlq_status" in {
            n for n, _t in eng.columns(quarantine)
        }
        q = dashboard.build(
            query,
            c.outputs.facts,
            c.name,
            quarantine=quarantine,
            dlq_status=dlq_status,
            check_id=check_id,
            runs=runs,
            limit=limit,
        )
        rows = eng.fetch_dicts(q.query)
    finally:
        eng.close()
    return q.columns, rows, path
