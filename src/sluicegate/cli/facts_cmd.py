"""``sluicegate facts latest|trend|attention|ledger CONTRACT`` — the dashboard queries,
from a terminal.

The queries are the objects in ``compile/dashboard.py``: each subcommand runs the DuckDB
rendering on the contract's warehouse (read-only, waiting briefly while a run publishes),
or prints the SQL for another dialect (``--sql --dialect trino``) so a team can put the
same query on its own dashboard. ``attention --fail-on warn|fail`` exits 1 when anything
at that level needs attention, for a scheduler to alert on.
"""

from __future__ import annotations

import datetime as dt
import sys
from collections.abc import Callable
from functools import wraps
from typing import Any

import click

from ..errors import UsageError
from .common import (
    CONTEXT,
    contract_argument,
    engine_option,
    examples,
    handled,
    json_option,
    logical_date_option,
    parse_vars,
    var_option,
)
from .console import CliConsole, show_metric
from .present import check_dialect, check_name, emit_json, number, shorten_middle, width
from .present import norm_path as _norm

#: How long a reader waits for a run's publish transaction to release the warehouse.
READ_WAIT_SECONDS = 30.0
#: compile/dashboard.py's QUERIES and TREND_RUNS, repeated so that loading the CLI does not
#: import sqlglot (a test pins them equal).
QUERIES = ("latest", "trend", "attention")
TREND_RUNS = 90
#: Facts columns stored as canonical decimal text: numbers in JSON, shares as % for people.
DECIMAL_TEXT = ("metric", "threshold_warn", "threshold_fail")
#: What a person reads of each query (JSON has every column): (column, header) pairs.
HUMAN_COLUMNS: dict[str, tuple[tuple[str, str], ...]] = {
    "latest": (
        ("check_id", "check"),
        ("status", "status"),
        ("metric", "metric"),
        ("threshold_warn", "warn_above"),
        ("threshold_fail", "fail_above"),
        ("failed", "failed"),
        ("evaluated", "of"),
        ("logical_date", "date"),
    ),
    "trend": (
        ("check_id", "check"),
        ("logical_date", "date"),
        ("run_id", "run"),
        ("status", "status"),
        ("metric", "metric"),
        ("threshold_warn", "warn_above"),
        ("threshold_fail", "fail_above"),
        ("failed", "failed"),
        ("evaluated", "of"),
    ),
    "attention": (
        ("source", "source"),
        ("check_id", "check"),
        ("status", "status"),
        ("severity", "severity"),
        ("owner", "owner"),
        ("metric", "metric"),
        ("threshold_warn", "warn_above"),
        ("threshold_fail", "fail_above"),
        ("diagnostic", "diagnostic"),
    ),
}


def _show(v: Any) -> str:
    if v is None:
        return ""
    if isinstance(v, dt.datetime):
        return v.isoformat(sep=" ", timespec="seconds")
    return str(v)


wait_option = click.option(
    "--wait",
    "wait_seconds",
    type=click.FloatRange(0, None),
    default=READ_WAIT_SECONDS,
    show_default=True,
    help="Seconds to wait while a run holds the warehouse to publish.",
)


def _reader_command(fn: Callable[..., None]) -> Callable[..., None]:
    """The options every facts subcommand shares (--json, --wait, --var, --date,
    --engine) and its error handler; ``fn`` gets the loaded contract first."""

    @wraps(fn)
    def load_first(
        *, contract: str, variables: tuple[str, ...], logical_date: str | None, **kwargs: Any
    ) -> None:
        from ..compile.contract_check import load_contract

        loaded = load_contract(contract, variables=parse_vars(variables), logical_date=logical_date)
        fn(loaded, **kwargs)

    options = (
        json_option(),
        wait_option,
        var_option(),
        logical_date_option("Value of ${logical_date} in the contract."),
        engine_option("Engine of the warehouse (default: the contract's, else duckdb)."),
    )
    command: Callable[..., None] = handled(load_first)
    for option in reversed(options):
        command = option(command)
    return command


def _query_options(fn: Callable[..., None]) -> Callable[..., None]:
    """--limit, --sql and --dialect: the options of the three dashboard queries."""
    for option in reversed(
        (
            click.option(
                "--limit",
                type=click.IntRange(1, 100_000),
                metavar="N",
                help="At most N rows (each query is bounded anyway).",
            ),
            click.option(
                "--sql", "as_sql", is_flag=True, help="Print the query text instead of running it."
            ),
            click.option(
                "-d",
                "--dialect",
                default="duckdb",
                show_default=True,
                help="Dialect of --sql: duckdb, spark, trino, or any sqlglot dialect.",
            ),
        )
    ):
        fn = option(fn)
    return fn


@click.group("facts", context_settings=CONTEXT)
def facts() -> None:
    """Quality facts of a contract: latest, trend, attention, ledger.

    \b
      latest     the newest fact of every check, worst first
      trend      the last 90 runs of every check (--check one, --runs N)
      attention  warn/fail facts with owner, thresholds and metric, and DLQ rows
                 waiting per reason; --fail-on warn|fail exits 1 for a scheduler
      ledger     raw = clean + withheld + duplicates + DLQ statuses, per run (each
                 micro-batch) and in total; exit 3 if it does not balance

    Each runs on the contract's warehouse, read-only: it works while a run is going and
    waits up to --wait seconds during the run's short publish transaction. latest, trend
    and attention print their SQL for any dialect with --sql --dialect trino|spark|….

    \b
    Examples:
      sluicegate facts latest contract.yml
      sluicegate facts attention contract.yml --fail-on fail --json
    """


@facts.command(context_settings=CONTEXT)
@contract_argument
@_query_options
@_reader_command
@examples("sluicegate facts latest contract.yml", "sluicegate facts latest contract.yml --json")
def latest(loaded: Any, **kw: Any) -> None:
    """The newest fact of every check of CONTRACT, worst first."""
    _dashboard(loaded, "latest", **kw)


@facts.command(context_settings=CONTEXT)
@contract_argument
@click.option(
    "--check",
    "check_id",
    metavar="CHECK_ID",
    help="Only this check (quarantine_share, rule:NAME, builtin:corrupt_record, …).",
)
@click.option(
    "--runs",
    type=click.IntRange(1, 10_000),
    default=TREND_RUNS,
    show_default=True,
    help="The last N runs of each check.",
)
@_query_options
@_reader_command
@examples(
    "sluicegate facts trend contract.yml --check quarantine_share --runs 30",
    "sluicegate facts trend contract.yml --check rule:positive_amount --json",
)
def trend(loaded: Any, **kw: Any) -> None:
    """The last runs of every check of CONTRACT (or of one, --check), oldest first."""
    _dashboard(loaded, "trend", **kw)


@facts.command(context_settings=CONTEXT)
@contract_argument
@click.option(
    "--fail-on",
    type=click.Choice(["warn", "fail"]),
    help="Exit 1 when a fact at this level or worse needs attention (warn: warn or fail).",
)
@_query_options
@_reader_command
@examples(
    "sluicegate facts attention contract.yml",
    "sluicegate facts attention contract.yml --fail-on warn --json",
)
def attention(loaded: Any, fail_on: str | None, **kw: Any) -> None:
    """Warn/fail facts of CONTRACT with owner, thresholds and metric, and the DLQ rows
    waiting per reason (status quarantined or fixed).

    Exit 0 unless --fail-on is given and a fact at that level (or worse) is listed: then
    exit 1, the same code as a failed gate, so a scheduler can alert the owners listed.
    """
    rows = _dashboard(loaded, "attention", **kw)
    if fail_on is None or rows is None:
        return
    levels = ("warn", "fail") if fail_on == "warn" else ("fail",)
    hits = [r for r in rows if r.get("source") == "fact" and r.get("status") in levels]
    if hits:
        CliConsole().error(
            f"{len(hits)} check(s) at {fail_on} or worse: "
            + ", ".join(f"{r['check_id']} {r['status']}" for r in hits[:8])
        )
        sys.exit(1)


@facts.command(context_settings=CONTEXT)
@contract_argument
@_reader_command
@examples("sluicegate facts ledger contract.yml", "sluicegate facts ledger contract.yml --json")
def ledger(loaded: Any, as_json: bool, wait_seconds: float, engine: str | None) -> None:
    """The cumulative ledger of CONTRACT, per run (each micro-batch) and in total.

    raw = clean + withheld + duplicates + quarantined + fixed + recycled + rejected.
    Exit 0 when every run and the total balance, 3 when anything does not.
    """
    from .ledger_cmd import facts_ledger

    facts_ledger(loaded, as_json=as_json, wait_seconds=wait_seconds)


def _dashboard(
    loaded: Any,
    query: str,
    *,
    as_json: bool,
    as_sql: bool,
    dialect: str,
    wait_seconds: float,
    engine: str | None,
    limit: int | None,
    check_id: str | None = None,
    runs: int = TREND_RUNS,
) -> list[dict[str, Any]] | None:
    """Run (or print) one dashboard query; returns its rows (None when printing SQL)."""
    from sqlglot.errors import UnsupportedError

    from ..compile import dashboard
    from ..compile.render import render

    c = loaded.contract
    if as_sql:
        check_dialect(dialect)
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
        return None
    columns, rows, where = run_query(
        loaded,
        query,
        check_id=check_id,
        runs=runs,
        limit=limit,
        wait_seconds=wait_seconds,
        engine=engine,
    )
    if as_json:
        emit_json(
            {
                "contract": c.name,
                "query": query,
                "warehouse": _norm(where),
                "columns": columns,
                "count": len(rows),
                "rows": [
                    {k: number(v) if k in DECIMAL_TEXT else v for k, v in r.items()} for r in rows
                ],
            },
            loaded.redactor,
        )
        return rows
    con = CliConsole()
    if not rows:
        con.line(
            "nothing needs attention" if query == "attention" else f"no facts for '{c.name}' yet"
        )
        return rows
    shown = HUMAN_COLUMNS[query]
    con.table(
        f"{query} facts of {c.name} ({shorten_middle(_norm(where), max(20, width() - 30))})",
        [header for _k, header in shown],
        [[_cell(loaded, r, k) for k, _h in shown] for r in rows],
        numeric={"metric", "warn_above", "fail_above", "failed", "of"},
    )
    if query == "trend":
        con.line("run: the first 12 characters of the run id (--json has all)")
    return rows


def _cell(loaded: Any, row: dict[str, Any], key: str) -> str:
    """One value as people read it: shares as percentages, run ids cut to 12 characters."""
    v = row.get(key)
    if key in DECIMAL_TEXT and v is not None:
        return show_metric(row.get("check_id") or "", v, row.get("detail") or "")
    if key == "run_id" and v:
        return str(v)[:12]
    return loaded.redactor(_show(v))


def _open_reader(loaded: Any, wait_seconds: float, engine: str | None = None) -> tuple[Any, str]:
    from .reader import open_reader

    return open_reader(loaded, wait_seconds, engine)


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


def known_checks(loaded: Any, eng: Any) -> list[str]:
    """Every check id ``--check`` may name: the contract's checks, rules and built-ins,
    and any check id the facts table holds for it (a rule since removed keeps its trend)."""
    from sqlglot import exp

    from ..compile.render import col, lit
    from ..run.facts import BUILTINS, CHECKS, STREAM_CHECKS

    c = loaded.contract
    names = {*CHECKS, *STREAM_CHECKS, *(f"builtin:{b}" for b in BUILTINS)}
    names |= {f"rule:{r.name}" for r in c.rules}
    q = (
        exp.select(col("check_id"))
        .distinct()
        .from_(exp.to_table(c.outputs.facts))
        .where(exp.EQ(this=col("contract"), expression=lit(c.name)))
    )
    names |= {row[0] for row in eng.fetch(q)}
    return sorted(names)


def run_query(
    loaded: Any,
    query: str,
    *,
    check_id: str | None = None,
    runs: int = TREND_RUNS,
    limit: int | None = None,
    wait_seconds: float = READ_WAIT_SECONDS,
    engine: str | None = None,
) -> tuple[list[str], list[dict[str, Any]], str]:
    """Run one dashboard query on the contract's warehouse: (columns, rows, warehouse).

    An unknown ``check_id`` is a usage error with the closest check (exit 2), never an
    empty result.
    """
    from ..compile import dashboard

    c = loaded.contract
    eng, path = _open_reader(loaded, wait_seconds, engine)
    try:
        if not eng.table_exists(c.outputs.facts):
            raise UsageError(
                f"the warehouse {_norm(path)} has no facts table '{c.outputs.facts}' yet",
                hint="run the contract first: sluicegate run CONTRACT",
            )
        if check_id is not None:
            check_name("--check", check_id, known_checks(loaded, eng), what="check")
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
