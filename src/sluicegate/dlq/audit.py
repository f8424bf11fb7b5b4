"""The DLQ audit table: one row per status change or edit — who, when, before, after.

Audit rows are written by ``INSERT … SELECT`` in the same transaction as the change they
describe, so a change is never visible without its audit row (and vice versa). Before
and after are small canonical-JSON objects of the fields that changed
(``{"amt":-5,"_dlq_status":"quarantined"}``), built with the same formatter as the key.
"""

from __future__ import annotations

import datetime as dt

from sqlglot import exp

from ..compile.render import col, ident, lit
from ..engines import Engine
from .canonical import Field, json_object
from .tables import AUDIT_COLUMNS, DlqTables, empty_select


def utcnow() -> dt.datetime:
    """Naive UTC now (TIMESTAMP columns hold UTC wall-clock time)."""
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


def ts_literal(t: dt.datetime) -> exp.Expression:
    return exp.cast(lit(t.isoformat(sep=" ", timespec="microseconds")), "TIMESTAMP")


def ensure_audit(eng: Engine, tables: DlqTables) -> None:
    if not eng.table_exists(tables.audit):
        eng.create_table_as(tables.audit, empty_select(AUDIT_COLUMNS))


def status_field(expr: exp.Expression) -> Field:
    return Field("_dlq_status", expr, "string")


def audit_insert(
    eng: Engine,
    tables: DlqTables,
    source: exp.Expression,
    *,
    action: str,
    by: str,
    at: dt.datetime,
    before: list[Field] | None,
    after: list[Field] | None,
    run_id: str | None = None,
    where: exp.Expression | None = None,
    key: exp.Expression | None = None,
) -> None:
    """Insert one audit row per row of ``source`` (a table name or a subquery).

    ``before``/``after`` are evaluated over ``source``'s row; ``None`` writes NULL (the row
    did not exist before / left the inbox).
    """
    ensure_audit(eng, tables)
    d = eng.dialect
    values = {
        "_dlq_sk": key if key is not None else col("_dlq_sk"),
        "action": lit(action),
        "changed_by": lit(by),
        "changed_at": ts_literal(at),
        "before_json": json_object(before, d) if before is not None else exp.null(),
        "after_json": json_object(after, d) if after is not None else exp.null(),
        "run_id": lit(run_id),
    }
    types = dict(AUDIT_COLUMNS)
    select = exp.select(
        *[exp.alias_(exp.cast(v, types[n]), ident(n)) for n, v in values.items()]
    ).from_(source if not isinstance(source, str) else exp.Table(this=ident(source)))
    if where is not None:
        select = select.where(where)
    eng.execute(
        exp.insert(
            select,
            exp.Table(this=ident(tables.audit)),
            columns=[ident(n) for n, _t in AUDIT_COLUMNS],
        )
    )


def audit_history(tables: DlqTables, sk: str) -> exp.Select:
    """The audit rows of one inbox key, oldest first."""
    return (
        exp.select(*[col(n) for n, _t in AUDIT_COLUMNS])
        .from_(exp.Table(this=ident(tables.audit)))
        .where(exp.EQ(this=col("_dlq_sk"), expression=lit(sk)))
        .order_by(col("changed_at"), col("action"))
    )
