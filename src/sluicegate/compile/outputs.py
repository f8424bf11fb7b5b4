"""Projections from the routed relation into the published tables.

Every output row carries its lineage, ``_run_id`` and ``_logical_date``; reruns of a
logical date replace exactly that date's rows.
"""

from __future__ import annotations

from sqlglot import exp

from ..contract.models import Contract
from .render import col, ident, lineage_file, lit
from .rules import CompiledRule

RUN_COLUMNS = ["_run_id", "_logical_date"]
RECYCLED_FROM = "_recycled_from"  # clean rows recycled from the DLQ (run/recycle.py)


def run_columns(run_id: str, logical_date: str) -> list[exp.Expression]:
    return [
        exp.alias_(lit(run_id), ident("_run_id")),
        exp.alias_(exp.cast(lit(logical_date), "DATE"), ident("_logical_date")),
    ]


def data_columns(contract: Contract, partitions: list[str]) -> list[str]:
    """Partition columns (from Hive folders), then declared columns in order."""
    return [p for p in partitions if p not in contract.source.columns] + list(
        contract.source.columns
    )


def clean_select(
    routed: str,
    contract: Contract,
    partitions: list[str],
    rules: list[CompiledRule],
    run_id: str,
    logical_date: str,
) -> exp.Select:
    cols = [col(c) for c in data_columns(contract, partitions)]
    extra = [col("_warnings")] if any(not r.routes for r in rules) else []
    return (
        exp.select(
            *cols,
            lineage_file(),
            col("_source_line"),
            *extra,
            *run_columns(run_id, logical_date),
            # NULL for a run's own rows; the inbox key for a row recycled from the DLQ
            exp.alias_(exp.cast(exp.null(), "VARCHAR"), ident(RECYCLED_FROM)),
        )
        .from_(exp.to_table(routed))
        .where(col("_ok"))
    )


def quarantine_select(
    routed: str, contract: Contract, partitions: list[str], run_id: str, logical_date: str
) -> exp.Select:
    cols = [col(c) for c in data_columns(contract, partitions)]
    return (
        exp.select(
            *cols,
            lineage_file(),
            col("_source_line"),
            col("_reason"),
            col("_failed_rules"),
            col("_rescued_data"),
            col("_raw"),
            *run_columns(run_id, logical_date),
        )
        .from_(exp.to_table(routed))
        .where(exp.Not(this=col("_ok")))
    )


def duplicates_select(
    ranked: str, contract: Contract, partitions: list[str], run_id: str, logical_date: str
) -> exp.Select:
    cols = [col(c) for c in data_columns(contract, partitions)]
    return (
        exp.select(
            *cols,
            lineage_file(),
            col("_source_line"),
            lineage_file("_kept_source_file"),
            col("_kept_source_line"),
            col("_rescued_data"),
            *run_columns(run_id, logical_date),
        )
        .from_(exp.to_table(ranked))
        .where(exp.GT(this=col("_rn"), expression=exp.Literal.number(1)))
    )


def empty_like(select: exp.Select) -> exp.Select:
    """The same projection with no rows: creates a table with the right schema."""
    return select.copy().where(exp.false(), append=False).limit(0)


def replace_scope(logical_date: str, run_id: str | None = None) -> exp.Expression:
    """The rows a run replaces: its logical date's (a batch run), or, given ``run_id``,
    only that run's rows of the date (an incremental micro-batch: the micro-batches of one
    date accumulate, a rerun of the same micro-batch replaces itself; docs/streaming.md)."""
    where: exp.Expression = exp.EQ(
        this=col("_logical_date"), expression=exp.cast(lit(logical_date), "DATE")
    )
    if run_id is not None:
        where = exp.and_(where, exp.EQ(this=col("_run_id"), expression=lit(run_id)))
    return where


def delete_run(
    table: str, logical_date: str, *, keep_recycled: bool = False, run_id: str | None = None
) -> exp.Delete:
    """Rows of this logical date (of ``run_id`` only, if given): a rerun replaces them.

    ``keep_recycled`` (the clean table) spares rows recycled from the DLQ: they are the
    operators' work, and the inbox MERGE (``dlq/inbox.py``) decides their fate.
    """
    where = replace_scope(logical_date, run_id)
    if keep_recycled:
        where = exp.and_(where, exp.Is(this=col(RECYCLED_FROM), expression=exp.null()))
    return exp.delete(exp.Table(this=ident(table)), where=where)


def delete_run_id(table: str, run_id: str) -> exp.Delete:
    return exp.delete(
        exp.Table(this=ident(table)), where=exp.EQ(this=col("_run_id"), expression=lit(run_id))
    )


def insert_into(table: str, select: exp.Select) -> exp.Insert:
    return exp.insert(select, exp.Table(this=ident(table)))
