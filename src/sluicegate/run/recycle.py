"""Recycle: re-validate ``fixed`` DLQ rows through the same compiled contract, exactly once.

In ``run/`` because it runs a run's own stages (compile, references, route) on the
DLQ (dlq/, the layer below) and publishes like a run.

The fixed rows become a relation shaped like a run's kept rows and go through the run's
own routing (``compile/route.py`` ``flags_select`` + ``routed_select``: the same rules,
the same NULL-fails semantics, the same reference semi-joins, references loaded the way
a run loads them). In one transaction:

* rows that pass are inserted into the clean table — original lineage, logical date and
  values, ``_run_id`` = the recycle's id, ``_recycled_from`` = their ``_dlq_sk`` — and
  into the outbox, and become ``recycled``;
* rows that fail become ``quarantined`` again with fresh ``_reason`` /
  ``_dlq_failed_rules`` and ``_dlq_attempts`` + 1 (never dropped: seed 004 lost them);
* every change is audited; counts are read back and must agree, else nothing commits.

A row whose key is already in the outbox is never recycled again, whatever its status
says (e.g. set back to ``fixed`` by hand): it is restored to ``recycled`` instead. With
the status change in the same transaction, a second recycle finds nothing to do.

Built-in checks on a fixed row: it is still ``corrupt_record`` while it has its raw
text and no value at all; still ``type_mismatch`` while ``_dlq_rescued_data`` holds the
original text of a declared column (a ``dlq fix --set`` of that column resolves it).
"""

from __future__ import annotations

import hashlib
from typing import Any

from sqlglot import exp

from ..compile import route as route_c
from ..compile.outputs import RECYCLED_FROM
from ..compile.render import col, ident, lit
from ..dlq.audit import audit_insert, ensure_audit, status_field, ts_literal, utcnow
from ..dlq.canonical import Field
from ..dlq.inbox import ensure_outbox
from ..dlq.store import DlqStore
from ..errors import LedgerError, LedgerViolation, SluiceError
from ..report.events import Silent
from .modes import Batch
from .pipeline import stage_compile, stage_references
from .state import RunContext

T_KEPT, T_FLAGS, T_ROUTED = "_sg_dlq_kept", "_sg_dlq_flags", "_sg_dlq_routed"


def _count(store: DlqStore, query: exp.Expression) -> int:
    return int(store.engine.fetch(query)[0][0])


def _count_where(table: str, where: exp.Expression | None = None) -> exp.Select:
    q = exp.select(exp.func("COUNT", exp.Star())).from_(exp.Table(this=ident(table)))
    return q.where(where) if where is not None else q


def _keys(table: str) -> exp.Subquery:
    return exp.Subquery(this=exp.select(col("_dlq_sk")).from_(exp.Table(this=ident(table))))


def already_recycled(outbox: str) -> exp.Expression:
    """The exactly-once guard: the row's key is already in the outbox."""
    return exp.In(this=col("_dlq_sk"), query=_keys(outbox))


def recycle_run_id(store: DlqStore, at: Any) -> str:
    """A fresh id for one recycle (it tags the clean rows and outbox rows it writes)."""
    h = hashlib.sha256(f"{store.loaded.digest}|{store.contract.name}|{at.isoformat()}".encode())
    return "recycle-" + h.hexdigest()[:16]


def kept_select(store: DlqStore, where: exp.Expression) -> exp.Select:
    """Inbox rows as a run's kept relation: data columns, lineage, ``_corrupt``, ``_mismatch``."""
    declared = store.declared
    rescued = col("_dlq_rescued_data")
    corrupt = exp.and_(
        exp.Not(this=exp.Is(this=col("_raw"), expression=exp.null())),
        *[exp.Is(this=col(c), expression=exp.null()) for c in declared],
    )
    mismatch = exp.or_(
        *[
            exp.Not(
                this=exp.Is(
                    this=exp.JSONExtractScalar(
                        this=rescued.copy(),
                        expression=exp.JSONPath(
                            expressions=[exp.JSONPathRoot(), exp.JSONPathKey(this=c)]
                        ),
                    ),
                    expression=exp.null(),
                )
            )
            for c in declared
        ]
    )
    return (
        exp.select(
            *[col(c) for c in store.data_columns()],
            col("_source_file"),
            col("_source_line"),
            col("_logical_date"),
            col("_dlq_sk"),
            col("_dlq_source_table"),
            col("_dlq_attempts"),
            col("_row_data"),
            exp.alias_(exp.paren(corrupt), ident("_corrupt")),
            exp.alias_(exp.paren(mismatch), ident("_mismatch")),
        )
        .from_(exp.Table(this=ident(store.tables.inbox)))
        .where(where)
    )


def _compile(store: DlqStore) -> RunContext:
    """The contract's rules and references, compiled and loaded exactly as a run does."""
    ctx = RunContext(loaded=store.loaded, engine=store.engine, listener=Silent(), mode=Batch())
    ctx.partitions = list(store.partitions)
    stage_compile(ctx)
    stage_references(ctx)
    return ctx


def recycle(store: DlqStore, *, by: str) -> dict[str, Any]:
    """Recycle every ``fixed`` row (see the module docstring). Returns what happened."""
    eng, t = store.engine, store.tables
    ctx = _compile(store)
    now = utcnow()
    rid = recycle_run_id(store, now)
    fixed = exp.EQ(this=col("_dlq_status"), expression=lit("fixed"))
    in_outbox = already_recycled(t.outbox)
    result: dict[str, Any] = {
        "recycle_run_id": rid,
        "considered": 0,
        "recycled": 0,
        "requarantined": 0,
        "already_recycled": 0,
        "recycled_keys": [],
        "requarantined_rows": [],
    }
    with eng.transaction():
        ensure_outbox(eng, t)
        ensure_audit(eng, t)
        stale = exp.and_(fixed, in_outbox)
        result["already_recycled"] = _count(store, _count_where(t.inbox, stale))
        if result["already_recycled"]:
            audit_insert(
                eng,
                t,
                t.inbox,
                action="restore",
                by=by,
                at=now,
                where=stale,
                before=[status_field(col("_dlq_status"))],
                after=[status_field(lit("recycled"))],
                run_id=rid,
            )
            eng.execute(_set_status(t.inbox, "recycled", stale))
        eng.create_table_as(
            T_KEPT, kept_select(store, exp.and_(fixed, exp.Not(this=in_outbox))), temporary=True
        )
        considered = _count(store, _count_where(T_KEPT))
        result["considered"] = considered
        if considered:
            _route(store, ctx)
            passed = _count(store, _count_where(T_ROUTED, col("_ok")))
            _write_passed(store, rid, now)
            _audit_outcomes(store, by, now, rid)
            eng.execute(_merge_outcomes(t.inbox))
            _prove(store, rid, considered, passed)
            result["recycled"] = passed
            result["requarantined"] = considered - passed
            result["recycled_keys"] = [
                r[0]
                for r in eng.fetch(
                    exp.select(col("_dlq_sk")).from_(T_ROUTED).where(col("_ok")).order_by("1")
                )
            ]
            result["requarantined_rows"] = eng.fetch_dicts(
                exp.select(col("_dlq_sk"), col("_reason"), col("_dlq_attempts"))
                .from_(exp.Table(this=ident(t.inbox)))
                .where(
                    exp.and_(
                        exp.In(this=col("_dlq_sk"), query=_keys(T_ROUTED)),
                        exp.EQ(this=col("_dlq_status"), expression=lit("quarantined")),
                    )
                )
                .order_by(col("_dlq_sk"))
            )
    return result


def _route(store: DlqStore, ctx: Any) -> None:
    eng = store.engine
    eng.create_table_as(
        T_FLAGS,
        route_c.flags_select(
            T_KEPT, store.contract, ctx.rules, ctx.memberships, ctx.reference_tables
        ),
        temporary=True,
    )
    eng.create_table_as(T_ROUTED, route_c.routed_select(T_FLAGS, ctx.rules), temporary=True)


def _write_passed(store: DlqStore, rid: str, now: Any) -> None:
    """Passing rows → clean (original lineage and date, tagged) and → outbox."""
    eng, t = store.engine, store.tables
    routed_cols = {n for n, _t in eng.columns(T_ROUTED)}
    provided: dict[str, exp.Expression] = {
        **{n: col(n) for n in store.data_columns()},
        "_source_file": col("_source_file"),
        "_source_line": col("_source_line"),
        "_run_id": lit(rid),
        "_logical_date": col("_logical_date"),
        RECYCLED_FROM: col("_dlq_sk"),
    }
    if "_warnings" in routed_cols:
        provided["_warnings"] = col("_warnings")
    clean_cols = [n for n, _t in eng.columns(t.clean)]
    unknown = [n for n in clean_cols if n not in provided]
    if unknown or RECYCLED_FROM not in clean_cols:
        raise SluiceError(
            f"the clean table {t.clean} does not have the shape recycle expects "
            f"(unknown columns {unknown}, {RECYCLED_FROM} present: {RECYCLED_FROM in clean_cols})",
            hint="rerun the contract with this version of sluicegate to recreate it",
        )
    eng.execute(
        exp.insert(
            exp.select(*[exp.alias_(provided[n], ident(n)) for n in clean_cols])
            .from_(T_ROUTED)
            .where(col("_ok")),
            exp.Table(this=ident(t.clean)),
            columns=[ident(n) for n in clean_cols],
        )
    )
    outbox = {
        "_dlq_sk": col("_dlq_sk"),
        "_dlq_source_table": col("_dlq_source_table"),
        "_row_data": col("_row_data"),
        "_dlq_recycled_at": ts_literal(now),
        "_dlq_recycle_run_id": lit(rid),
    }
    eng.execute(
        exp.insert(
            exp.select(*[exp.alias_(v, ident(n)) for n, v in outbox.items()])
            .from_(T_ROUTED)
            .where(col("_ok")),
            exp.Table(this=ident(t.outbox)),
            columns=[ident(n) for n in outbox],
        )
    )


def _audit_outcomes(store: DlqStore, by: str, now: Any, rid: str) -> None:
    eng, t = store.engine, store.tables
    audit_insert(
        eng,
        t,
        T_ROUTED,
        action="recycle",
        by=by,
        at=now,
        where=col("_ok"),
        before=[status_field(lit("fixed"))],
        after=[status_field(lit("recycled"))],
        run_id=rid,
    )
    attempts = col("_dlq_attempts")
    audit_insert(
        eng,
        t,
        T_ROUTED,
        action="requarantine",
        by=by,
        at=now,
        where=exp.Not(this=col("_ok")),
        before=[status_field(lit("fixed")), Field("_dlq_attempts", attempts, "integer")],
        after=[
            status_field(lit("quarantined")),
            Field("_dlq_attempts", exp.Add(this=attempts.copy(), expression=lit(1)), "integer"),
            Field("_reason", col("_reason"), "string"),
        ],
        run_id=rid,
    )


def _set_status(table: str, status: str, where: exp.Expression) -> exp.Update:
    return exp.Update(
        this=exp.Table(this=ident(table)),
        expressions=[exp.EQ(this=col("_dlq_status"), expression=lit(status))],
        where=exp.Where(this=where),
    )


def _merge_outcomes(inbox: str) -> exp.Merge:
    """Status changes from the routed fixed rows, by key: recycled, or back to quarantined."""
    t, s = "_t", "_s"
    recycled = exp.Update(expressions=[exp.EQ(this=col("_dlq_status"), expression=lit("recycled"))])
    back = exp.Update(
        expressions=[
            exp.EQ(this=col("_dlq_status"), expression=lit("quarantined")),
            exp.EQ(
                this=col("_dlq_attempts"),
                expression=exp.Add(this=col("_dlq_attempts", t), expression=lit(1)),
            ),
            exp.EQ(this=col("_reason"), expression=col("_reason", s)),
            exp.EQ(this=col("_dlq_failed_rules"), expression=col("_failed_rules", s)),
        ]
    )
    return exp.Merge(
        this=exp.Table(this=ident(inbox), alias=exp.TableAlias(this=ident(t))),
        using=exp.Table(this=ident(T_ROUTED), alias=exp.TableAlias(this=ident(s))),
        on=exp.EQ(this=col("_dlq_sk", t), expression=col("_dlq_sk", s)),
        whens=exp.Whens(
            expressions=[
                exp.When(matched=True, source=False, condition=col("_ok", s), then=recycled),
                exp.When(matched=True, source=False, then=back),
            ]
        ),
    )


def _prove(store: DlqStore, rid: str, considered: int, passed: int) -> None:
    """Read the outcome back from the written tables; any disagreement rolls it all back."""
    t = store.tables
    in_routed = exp.In(this=col("_dlq_sk"), query=_keys(T_ROUTED))

    def status_is(s: str) -> exp.Expression:
        return exp.and_(in_routed.copy(), exp.EQ(this=col("_dlq_status"), expression=lit(s)))

    got = {
        "clean": _count(
            store, _count_where(t.clean, exp.EQ(this=col("_run_id"), expression=lit(rid)))
        ),
        "outbox": _count(
            store,
            _count_where(t.outbox, exp.EQ(this=col("_dlq_recycle_run_id"), expression=lit(rid))),
        ),
        "recycled": _count(store, _count_where(t.inbox, status_is("recycled"))),
        "requarantined": _count(store, _count_where(t.inbox, status_is("quarantined"))),
    }
    want = {
        "clean": passed,
        "outbox": passed,
        "recycled": passed,
        "requarantined": considered - passed,
    }
    bad = [
        LedgerViolation("recycle", f"{k}: expected {want[k]}, read back {got[k]}")
        for k in want
        if got[k] != want[k]
    ]
    if bad:
        raise LedgerError(bad)
