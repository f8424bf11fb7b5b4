"""The DLQ as an operator reads it: filtered pages of the inbox, counts by date × reason ×
status, and the values a filter may name (so a typo is caught, not an empty page).

Filters are one conjunction over the inbox (``_logical_date``, ``_run_id``, ``_reason``,
``_dlq_status``); a page is the filtered rows in lineage order plus the total they were
taken from, so a listing can say "N more".
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from typing import Any

from sqlglot import exp

from ..compile.render import col, ident, lit
from .store import DlqStore


@dataclass(frozen=True)
class Filters:
    """What an operator narrowed the inbox to (None: not narrowed)."""

    date: str | None = None
    run_id: str | None = None
    reason: str | None = None
    status: str | None = None

    def as_dict(self) -> dict[str, str | None]:
        return {"date": self.date, "run": self.run_id, "reason": self.reason, "status": self.status}

    def condition(self) -> exp.Expression | None:
        conds: list[exp.Expression] = []
        if self.date is not None:
            conds.append(
                exp.EQ(
                    this=exp.cast(col("_logical_date"), "VARCHAR"),
                    expression=lit(self.date),
                )
            )
        for column, value in (
            ("_run_id", self.run_id),
            ("_reason", self.reason),
            ("_dlq_status", self.status),
        ):
            if value is not None:
                conds.append(exp.EQ(this=col(column), expression=lit(value)))
        return exp.and_(*conds) if conds else None


def _from(store: DlqStore, filters: Filters) -> exp.Select:
    q = exp.select().from_(exp.Table(this=ident(store.tables.inbox)))
    cond = filters.condition()
    return q.where(cond) if cond is not None else q


def page(store: DlqStore, filters: Filters, limit: int | None) -> tuple[list[dict[str, Any]], int]:
    """(the first ``limit`` filtered rows in lineage order, how many match in all)."""
    total_q = _from(store, filters).select(exp.func("COUNT", exp.Star()))
    total = int(store.engine.fetch(total_q)[0][0])
    q = (
        _from(store, filters)
        .select(exp.Star())
        .order_by(col("_logical_date"), col("_source_file"), col("_source_line"))
    )
    if limit is not None:
        q = q.limit(limit)
    return store.engine.fetch_dicts(q), total


def summary(store: DlqStore, filters: Filters) -> list[dict[str, Any]]:
    """Row counts by logical date × reason × status, newest date first."""
    date = exp.cast(col("_logical_date"), "VARCHAR")
    q = (
        _from(store, filters)
        .select(
            exp.alias_(date, "logical_date"),
            exp.alias_(col("_reason"), "reason"),
            exp.alias_(col("_dlq_status"), "status"),
            exp.alias_(exp.func("COUNT", exp.Star()), "rows"),
        )
        .group_by(date, col("_reason"), col("_dlq_status"))
        .order_by(exp.Ordered(this=date, desc=True), col("_reason"), col("_dlq_status"))
    )
    return [
        {"logical_date": d, "reason": r, "status": s, "rows": int(n)}
        for d, r, s, n in store.engine.fetch(q)
    ]


def distinct(store: DlqStore, column: str) -> list[str]:
    """The values an inbox column holds (for did-you-mean on a filter)."""
    value = exp.cast(col(column), "VARCHAR") if column == "_logical_date" else col(column)
    q = exp.select(value).distinct().from_(exp.Table(this=ident(store.tables.inbox)))
    return sorted(str(v) for (v,) in store.engine.fetch(q) if v is not None)


def where_from(row: dict[str, Any], root: str) -> str:
    """``month=2024-01/part-000.json:52``: the source file relative to the source root,
    with its line (a bare file name repeats in every partition folder)."""
    path = str(row.get("_source_file") or "")
    line = row.get("_source_line")
    if path:
        absolute = os.path.normpath(os.path.abspath(path))
        rel = os.path.relpath(absolute, root) if root else absolute
        path = absolute if rel.startswith("..") else rel
    return f"{path}:{line}" if line is not None else path
