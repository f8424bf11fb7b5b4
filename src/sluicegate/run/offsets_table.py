"""The Kafka offsets ledger as a table: its columns and the queries that read it.

One row per micro-batch and partition (run/offsets.py writes them inside the publish
transaction). Kept apart from run/offsets.py so the cumulative ledger
(run/incremental.py ``stream_ledger``) can read it without the micro-batch mode.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from sqlglot import exp

from ..compile.facts import empty_select
from ..compile.render import col, ident, lit

if TYPE_CHECKING:
    from ..engines import Engine

OFFSETS_TABLE = "_sluicegate_offsets"
OFFSET_COLUMNS: tuple[tuple[str, str], ...] = (
    ("contract", "VARCHAR"),
    ("topic", "VARCHAR"),
    ("partition_id", "INTEGER"),
    ("from_offset", "BIGINT"),  # the first offset of the batch's range
    ("to_offset", "BIGINT"),  # the next offset to read (exclusive end)
    ("records", "BIGINT"),
    ("bytes", "BIGINT"),
    ("sha256", "VARCHAR"),  # over (offset, length, value) of every record read
    ("lost_offsets", "BIGINT"),  # offsets deleted by retention before from_offset (skip)
    ("run_id", "VARCHAR"),
    ("logical_date", "DATE"),
    ("status", "VARCHAR"),  # the batch's verdict, or 'start' for a `latest` start position
    ("engine", "VARCHAR"),
    ("processed_at", "TIMESTAMP"),
)
OFFSET_KEY = ("contract", "topic", "partition_id", "from_offset")


def _ensure_table(eng: Engine) -> None:
    if not eng.table_exists(OFFSETS_TABLE):
        eng.create_table_as(OFFSETS_TABLE, empty_select(OFFSET_COLUMNS))


def _where_contract(contract: str) -> exp.Expression:
    return exp.EQ(this=col("contract"), expression=lit(contract))


def _count_of_run(contract: str, run_id: str) -> exp.Select:
    return (
        exp.select(exp.func("COUNT", exp.Star()))
        .from_(exp.Table(this=ident(OFFSETS_TABLE)))
        .where(
            exp.and_(_where_contract(contract), exp.EQ(this=col("run_id"), expression=lit(run_id)))
        )
    )


def positions_select(contract: str) -> exp.Select:
    """The next offset to read per (topic, partition): the ledger's ``MAX(to_offset)``."""
    return (
        exp.select(col("topic"), col("partition_id"), exp.func("MAX", col("to_offset")))
        .from_(exp.Table(this=ident(OFFSETS_TABLE)))
        .where(_where_contract(contract))
        .group_by(col("topic"), col("partition_id"))
    )


def read_positions(eng: Engine, contract: str) -> dict[tuple[str, int], int]:
    """(topic, partition) → next offset (empty before the first micro-batch)."""
    if not eng.table_exists(OFFSETS_TABLE):
        return {}
    return {(t, int(p)): int(o) for t, p, o in eng.fetch(positions_select(contract))}


def offsets_select(contract: str) -> exp.Select:
    """Every ledger row of ``contract`` (for ``sluicegate facts ledger``)."""
    return (
        exp.select(*[col(n) for n, _t in OFFSET_COLUMNS])
        .from_(exp.Table(this=ident(OFFSETS_TABLE)))
        .where(_where_contract(contract))
        .order_by(col("topic"), col("partition_id"), col("from_offset"))
    )


def offsets_by_run(eng: Engine, contract: str) -> dict[str, list[dict[str, Any]]]:
    """run id → its ledger ranges (``facts ledger`` shows them per batch)."""
    if not eng.table_exists(OFFSETS_TABLE):
        return {}
    out: dict[str, list[dict[str, Any]]] = {}
    for r in eng.fetch_dicts(offsets_select(contract)):
        out.setdefault(r["run_id"], []).append(r)
    return out


__all__ = [
    "OFFSETS_TABLE",
    "OFFSET_COLUMNS",
    "OFFSET_KEY",
    "offsets_by_run",
    "offsets_select",
    "positions_select",
    "read_positions",
]
