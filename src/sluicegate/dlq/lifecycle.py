"""Operator actions on inbox rows: fix (edit values, then ``fixed``) and mark.

Lifecycle: ``quarantined → fixed → recycled``; ``fixed → quarantined`` again when a
recycle finds the row still failing (``_dlq_attempts`` + 1); ``quarantined | fixed →
rejected`` by an operator. ``recycled`` and ``rejected`` are final: such rows can no
longer be edited or marked. Every change writes an audit row in the same transaction.

Values are validated with the reader's own cast rules (``compile/cast.py``): an operator
cannot put into a row what the reader would have refused. A bulk ``--where`` predicate is
parsed and checked like a rule (``compile/rules.py``): one boolean expression over the
row's columns, no statements, no subqueries.
"""

from __future__ import annotations

import datetime as dt
import json
from dataclasses import dataclass, field
from typing import Any

from sqlglot import exp

from ..compile.cast import cast_text
from ..compile.render import col, ident, lit
from ..compile.rules import RuleError, check_expression, parse_predicate
from ..contract.suggest import closest
from ..errors import UsageError
from .audit import audit_insert, status_field, utcnow
from .canonical import Field, row_json
from .store import DlqStore
from .tables import EDITABLE_STATUSES, FINAL_STATUSES

T_TARGET = "_sg_dlq_target"

#: Columns a ``--where`` predicate may use besides the data columns.
WHERE_META_COLUMNS = (
    "_dlq_sk",
    "_dlq_status",
    "_dlq_attempts",
    "_reason",
    "_source_file",
    "_source_line",
    "_logical_date",
    "_run_id",
    "_raw",
    "_dlq_rescued_data",
)


@dataclass
class ActionResult:
    """What an operator action changed (printed by the CLI, ``--json`` as a dict)."""

    action: str
    status: str
    keys: list[str] = field(default_factory=list)
    values: dict[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        return {
            "action": self.action,
            "status": self.status,
            "count": len(self.keys),
            "keys": self.keys,
            "set": self.values,
        }


def checked_where(store: DlqStore, text: str) -> exp.Expression:
    """Parse and check a ``--where`` predicate like a rule; a clear UsageError otherwise."""
    columns = dict.fromkeys([*store.data_columns(), *WHERE_META_COLUMNS])
    try:
        tree = parse_predicate(text, what="--where")
        check_expression(tree, columns, what="--where")
    except RuleError as exc:
        did = f" (did you mean '{exc.suggestion}'?)" if exc.suggestion else ""
        raise UsageError(
            f"{exc.message}{did}",
            hint="--where takes one SQL boolean expression over the row's columns, "
            "e.g. \"_reason = 'non_positive_amount' AND amt = 0\"",
        ) from None
    return tree


def typed_value(store: DlqStore, column: str, text: str | None) -> exp.Expression:
    """The typed value ``text`` casts to under the reader's rules, or a UsageError."""
    specs = store.contract.source.columns
    spec = specs.get(column)
    if spec is None:
        did = closest(column, specs)
        raise UsageError(
            f"cannot set '{column}': only declared columns can be edited"
            + (f" (did you mean '{did}'?)" if did else ""),
            hint="declared columns: " + ", ".join(specs),
        )
    if text is None:
        if not spec.nullable:
            raise UsageError(f"cannot set '{column}' to NULL: it is declared nullable: false")
        return exp.cast(exp.null(), spec.parsed.datatype.copy())
    value = cast_text(lit(text), spec, store.engine.dialect)
    (ok,) = store.engine.fetch(exp.select(exp.Not(this=exp.Is(this=value, expression=exp.null()))))[
        0
    ]
    if not ok:
        formats = f" with one of the formats {spec.formats}" if spec.formats else ""
        raise UsageError(
            f"--set {column}={text!r} is not a valid {spec.type}{formats}; "
            "the value was not accepted (nothing changed)",
            hint="values are checked with the reader's cast rules (docs/contract-reference.md)",
        )
    return value


def _target(store: DlqStore, keys: list[str], where: str | None) -> exp.Expression:
    """The inbox rows an action applies to: explicit keys (each must exist and be editable)
    or a checked predicate (restricted to editable rows)."""
    if bool(keys) == bool(where):
        raise UsageError("give either one or more keys or --where, not both or neither")
    editable = exp.In(this=col("_dlq_status"), expressions=[lit(s) for s in EDITABLE_STATUSES])
    if where:
        return exp.and_(exp.paren(checked_where(store, where)), editable)
    for k in keys:
        row = store.row(k)
        if row["_dlq_status"] in FINAL_STATUSES:
            raise UsageError(
                f"row {k} is {row['_dlq_status']}: a final status, it cannot change any more"
            )
    return exp.In(this=col("_dlq_sk"), expressions=[lit(k) for k in keys])


def _select_target(store: DlqStore, cond: exp.Expression) -> tuple[exp.Expression, list[str]]:
    eng = store.engine
    q = exp.select(col("_dlq_sk")).from_(exp.Table(this=ident(store.tables.inbox))).where(cond)
    eng.create_table_as(T_TARGET, q, temporary=True)
    keys = [r[0] for r in eng.fetch(exp.select(col("_dlq_sk")).from_(T_TARGET).order_by("1"))]
    in_target = exp.In(
        this=col("_dlq_sk"),
        query=exp.Subquery(this=exp.select(col("_dlq_sk")).from_(exp.to_table(T_TARGET))),
    )
    return in_target, keys


def _update(table: str, values: dict[str, exp.Expression], where: exp.Expression) -> exp.Update:
    return exp.Update(
        this=exp.Table(this=ident(table)),
        expressions=[exp.EQ(this=col(n), expression=v) for n, v in values.items()],
        where=exp.Where(this=where),
    )


def _change(
    store: DlqStore,
    cond: exp.Expression,
    *,
    action: str,
    status: str,
    by: str,
    at: dt.datetime,
    values: dict[str, exp.Expression],
    before: list[Field],
    after: list[Field],
) -> tuple[exp.Expression, list[str]]:
    """Within a transaction: the rows matching ``cond`` get ``values`` and ``status``, the
    change audited (``before``/``after`` plus the status). Returns the target predicate and
    the keys changed."""
    eng, t = store.engine, store.tables
    in_target, hit = _select_target(store, cond)
    if hit:
        audit_insert(
            eng,
            t,
            t.inbox,
            action=action,
            by=by,
            at=at,
            where=in_target,
            before=[*before, status_field(col("_dlq_status"))],
            after=[*after, status_field(lit(status))],
        )
        eng.execute(_update(t.inbox, {**values, "_dlq_status": lit(status)}, in_target))
    return in_target, hit


def fix(
    store: DlqStore,
    *,
    keys: list[str],
    where: str | None,
    sets: dict[str, str | None],
    by: str,
) -> ActionResult:
    """Edit declared values of editable rows and mark them ``fixed``, audited.

    ``sets`` maps a declared column to its new text (``None`` = NULL). A set column's
    original text is dropped from ``_dlq_rescued_data``: the type mismatch it recorded is
    resolved by the edit.
    """
    if not sets:
        raise UsageError("nothing to fix: give at least one --set COLUMN=VALUE")
    values = {c: typed_value(store, c, v) for c, v in sets.items()}
    cond = _target(store, keys, where)
    eng, t = store.engine, store.tables
    specs = store.contract.source.columns
    now = utcnow()
    with eng.transaction():
        in_target, hit = _change(
            store,
            cond,
            action="fix",
            status="fixed",
            by=by,
            at=now,
            values=values,
            before=[Field(c, col(c), specs[c].parsed.kind) for c in values],
            after=[Field(c, v, specs[c].parsed.kind) for c, v in values.items()],
        )
        if hit:
            _resolve_rescued(store, in_target, list(values))
            eng.execute(
                _update(
                    t.inbox,
                    {"_row_data": row_json(store.contract, store.partitions, eng.dialect)},
                    in_target,
                )
            )
    return ActionResult("fix", "fixed", hit, dict(sets))


def _resolve_rescued(store: DlqStore, in_target: exp.Expression, columns: list[str]) -> None:
    """Drop the edited columns' original texts from ``_dlq_rescued_data``."""
    eng, inbox = store.engine, store.tables.inbox
    q = (
        exp.select(col("_dlq_sk"), col("_dlq_rescued_data"))
        .from_(exp.Table(this=ident(inbox)))
        .where(
            exp.and_(
                in_target.copy(),
                exp.Not(this=exp.Is(this=col("_dlq_rescued_data"), expression=exp.null())),
            )
        )
    )
    for sk, text in eng.fetch(q):
        data = json.loads(text)
        if not isinstance(data, dict) or not any(c in data for c in columns):
            continue
        rest = {k: v for k, v in data.items() if k not in columns}
        new = json.dumps(rest, ensure_ascii=False, separators=(",", ":")) if rest else None
        eng.execute(
            _update(
                inbox,
                {"_dlq_rescued_data": exp.cast(lit(new), "VARCHAR")},
                exp.EQ(this=col("_dlq_sk"), expression=lit(sk)),
            )
        )


def mark(
    store: DlqStore, *, keys: list[str], where: str | None, status: str, by: str
) -> ActionResult:
    """Set the status of editable rows to ``fixed`` (ready to recycle) or ``rejected``."""
    if status not in ("fixed", "rejected"):
        raise UsageError(f"cannot mark a row '{status}': choose fixed or rejected")
    cond = exp.and_(
        _target(store, keys, where), exp.NEQ(this=col("_dlq_status"), expression=lit(status))
    )
    now = utcnow()
    with store.engine.transaction():
        _, hit = _change(
            store, cond, action="mark", status=status, by=by, at=now, values={}, before=[], after=[]
        )
    return ActionResult("mark", status, hit)
