"""The quality-facts table and the run-record table as sqlglot trees.

Both are keyed (facts by ``(run_id, check_id)``, run records by ``run_id``) and written
with MERGE, so a rerun of the same run replaces its rows instead of adding to them. Rows
arrive as Python values and become one typed ``SELECT … UNION ALL …``: every value is
CAST to its column type, so the statement means the same on DuckDB, Spark and Trino.
"""

from __future__ import annotations

import functools
from collections.abc import Mapping, Sequence
from typing import Any

from sqlglot import exp

from .render import col, ident, lit

#: Columns of the facts table, in order, with their SQL types.
FACT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("contract", "VARCHAR"),
    ("run_id", "VARCHAR"),
    ("check_id", "VARCHAR"),
    ("kind", "VARCHAR"),  # check | rule | builtin
    ("rule_name", "VARCHAR"),  # the rule or built-in reason (joins to the DLQ's _reason)
    ("version", "INTEGER"),
    ("owner", "VARCHAR"),
    ("severity", "VARCHAR"),  # error: decides the run's status; warning: reported only
    ("status", "VARCHAR"),  # pass | warn | fail
    ("metric", "VARCHAR"),  # canonical decimal string
    ("threshold_warn", "VARCHAR"),
    ("threshold_fail", "VARCHAR"),
    ("failed", "BIGINT"),
    ("evaluated", "BIGINT"),
    ("diagnostic", "VARCHAR"),
    ("detail", "VARCHAR"),
    ("logical_date", "DATE"),
    ("run_started_at", "TIMESTAMP"),
    ("evaluated_at", "TIMESTAMP"),
)
FACT_KEY = ("run_id", "check_id")

#: The run record: one row per run id, written in the same transaction as the outputs.
RUNS_TABLE = "_sluicegate_runs"
RUN_COLUMNS: tuple[tuple[str, str], ...] = (
    ("run_id", "VARCHAR"),
    ("contract", "VARCHAR"),
    ("logical_date", "DATE"),
    ("status", "VARCHAR"),
    ("engine", "VARCHAR"),
    ("contract_digest", "VARCHAR"),
    ("binding_digest", "VARCHAR"),
    ("schema_fingerprint", "VARCHAR"),
    ("raw_records", "BIGINT"),
    ("clean", "BIGINT"),
    ("quarantined", "BIGINT"),
    ("duplicates", "BIGINT"),
    ("clean_published", "BIGINT"),
    ("started_at", "TIMESTAMP"),
    ("published_at", "TIMESTAMP"),
    ("metrics", "VARCHAR"),  # the run-metrics JSON as of the commit
)
RUN_KEY = ("run_id",)

#: Columns that hold wall-clock times: the only ones a rerun of the same run may change.
WALL_CLOCK_COLUMNS = frozenset(
    {"run_started_at", "evaluated_at", "started_at", "published_at", "metrics"}
)


def _typed(value: Any, sql_type: str) -> exp.Expression:
    """A literal CAST to its column type (NULL too: engines disagree on untyped NULLs)."""
    if value is not None and not isinstance(value, bool | int | float | str):
        value = str(value)  # dates and datetimes: ISO text, cast by the engine
    # the type is parsed once: DataType.build per cell was most of a 250-rule run's time;
    # a plain type is then a new two-field node, not a deep copy (1,000 rules: 19,000 cells)
    t = _datatype(sql_type)
    to = t.copy() if t.expressions else exp.DataType(this=t.this, nested=t.args.get("nested"))
    return exp.Cast(this=lit(value), to=to)


@functools.lru_cache(maxsize=64)
def _datatype(sql_type: str) -> exp.DataType:
    return exp.DataType.build(sql_type)


def rows_select(columns: Sequence[tuple[str, str]], rows: Sequence[Mapping[str, Any]]) -> exp.Query:
    """``SELECT CAST(_v._c0 AS t) AS c, … FROM (VALUES (v, …), …) AS _v`` — one typed row
    per mapping.

    One flat VALUES list: a chain of ``UNION ALL`` (one link per fact, i.e. per rule)
    deep-copied the whole chain at every link and nested as deep as there were rules, so a
    320-rule contract spent 49 s building its facts and a bigger one hit Python's recursion
    limit (benchmarks/many_rules.py). Each column is cast once, in the projection; a cell
    is cast only when its literal is not already of its column's kind (a number into
    text, a date), which keeps every VALUES column of one type on every engine while a
    1,000-rule run renders ~4,000 casts instead of 19,000 (each one a node to copy and
    render).
    """
    if not rows:
        return empty_select(columns)
    values = exp.values(
        [tuple(_cell(r.get(name), t) for name, t in columns) for r in rows],
        alias="_v",
        columns=[f"_c{i}" for i in range(len(columns))],
    )
    return exp.select(
        *[
            exp.alias_(
                exp.Cast(this=col(f"_c{i}", "_v"), to=_datatype(t).copy()), ident(name), copy=False
            )
            for i, (name, t) in enumerate(columns)
        ]
    ).from_(values, copy=False)


def _cell(value: Any, sql_type: str) -> exp.Expression:
    """A bare literal when it already has its column's kind (NULL, text into text, an
    integer into an integer column); otherwise the literal cast to the column's type."""
    if value is None:
        return exp.null()
    kind = sql_type.upper()
    if (isinstance(value, str) and kind == "VARCHAR") or (
        isinstance(value, int) and not isinstance(value, bool) and kind in ("BIGINT", "INTEGER")
    ):
        return lit(value)
    return _typed(value, sql_type)


def empty_select(columns: Sequence[tuple[str, str]]) -> exp.Select:
    """The typed projection with no rows: creates a table with the right schema."""
    return exp.select(
        *[exp.alias_(exp.cast(exp.null(), t), ident(name)) for name, t in columns]
    ).where(exp.false())


def merge_rows(
    table: str,
    columns: Sequence[tuple[str, str]],
    key: Sequence[str],
    rows: Sequence[Mapping[str, Any]],
    *,
    scope: tuple[str, str] | None = None,
) -> exp.Merge:
    """MERGE ``rows`` into ``table`` on ``key``: update matches, insert the rest.

    ``scope=(column, value)`` also deletes target rows of that scope that the source no
    longer has (``WHEN NOT MATCHED BY SOURCE``): a rerun's facts replace its old ones
    exactly, even if a check disappeared.
    """
    names = [n for n, _t in columns]
    on: exp.Expression | None = None
    for k in key:
        eq = exp.EQ(this=col(k, "t"), expression=col(k, "s"))
        on = eq if on is None else exp.and_(on, eq)
    whens = [
        exp.When(
            matched=True,
            then=exp.Update(
                expressions=[
                    exp.EQ(this=col(n), expression=col(n, "s")) for n in names if n not in key
                ]
            ),
        ),
        exp.When(
            matched=False,
            then=exp.Insert(
                this=exp.Tuple(expressions=[col(n) for n in names]),
                expression=exp.Tuple(expressions=[col(n, "s") for n in names]),
            ),
        ),
    ]
    if scope is not None:
        whens.append(
            exp.When(
                matched=False,
                source=True,
                condition=exp.EQ(this=col(scope[0], "t"), expression=lit(scope[1])),
                then=exp.var("DELETE"),
            )
        )
    return exp.Merge(
        this=exp.Table(this=ident(table), alias=exp.TableAlias(this=ident("t"))),
        using=exp.Subquery(this=rows_select(columns, rows), alias=exp.TableAlias(this=ident("s"))),
        on=on,
        whens=exp.Whens(expressions=whens),
    )


def merge_facts(table: str, run_id: str, facts: Sequence[Mapping[str, Any]]) -> exp.Merge:
    """The run's facts, keyed ``(run_id, check_id)``; the run's stale facts are deleted."""
    return merge_rows(table, FACT_COLUMNS, FACT_KEY, facts, scope=("run_id", run_id))


def merge_run(run: Mapping[str, Any]) -> exp.Merge:
    """The run record, keyed ``run_id``."""
    return merge_rows(RUNS_TABLE, RUN_COLUMNS, RUN_KEY, [run])


def count_facts(table: str, run_id: str) -> exp.Select:
    """Facts of one run: read back after the MERGE (a rerun must not duplicate them)."""
    return (
        exp.select(exp.func("COUNT", exp.Star()))
        .from_(exp.Table(this=ident(table)))
        .where(exp.EQ(this=col("run_id"), expression=lit(run_id)))
    )


def previous_fingerprint(contract: str, run_id: str) -> exp.Select:
    """The schema fingerprint of the contract's most recently published other run."""
    return (
        exp.select(col("schema_fingerprint"))
        .from_(exp.Table(this=ident(RUNS_TABLE)))
        .where(
            exp.and_(
                exp.EQ(this=col("contract"), expression=lit(contract)),
                exp.NEQ(this=col("run_id"), expression=lit(run_id)),
            )
        )
        .order_by(exp.Ordered(this=col("published_at"), desc=True), col("run_id"))
        .limit(1)
    )


def newest_value(routed: str, column: str) -> exp.Select:
    """The newest value of the freshness column over the clean rows.

    Clean rows only: a quarantined row with a far-future timestamp must not make a stale
    feed look fresh.
    """
    return (
        exp.select(exp.func("MAX", col(column)))
        .from_(exp.Table(this=ident(routed)))
        .where(col("_ok"))
    )
