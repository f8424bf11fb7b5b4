"""The fact export query: one logical date's fact rows with their Hive partition values.

Partitions are ``year=YYYY/month=M`` of the fact's event time (integers, no zero padding,
as Hive, Spark and pyarrow write and read them). A row whose time is NULL goes to the
``__HIVE_DEFAULT_PARTITION__`` folder every reader maps back to NULL: exported, not lost.
"""

from __future__ import annotations

from sqlglot import exp

from ..render import col, ident, lit
from ..render import table as table_ref
from .schema import EXPORT_PARTITIONS


def export_select(
    fact_table: str,
    columns: list[str],
    time_column: str,
    logical_date: str,
    run_id: str | None = None,
) -> exp.Select:
    """Every column of ``fact_table`` for ``logical_date`` (and ``run_id``, a micro-batch's
    own rows), then ``year`` and ``month``.

    Ordered by lineage, so a rerun of the same input writes the same bytes.
    """
    year, month = EXPORT_PARTITIONS
    where: exp.Expression = exp.EQ(
        this=col("_logical_date"), expression=exp.cast(lit(logical_date), "DATE")
    )
    if run_id is not None:
        where = exp.and_(where, exp.EQ(this=col("_run_id"), expression=lit(run_id)))
    return (
        exp.select(
            *[col(c) for c in columns],
            exp.alias_(exp.Year(this=col(time_column)), ident(year)),
            exp.alias_(exp.Month(this=col(time_column)), ident(month)),
        )
        .from_(table_ref(fact_table))
        .where(where)
        .order_by(col("_source_file"), col("_source_line"))
    )
