"""Publishing a run's quarantined rows into the DLQ inbox: MERGE on ``_dlq_sk``.

Called by ``run/publish.py`` inside the publish transaction, in place of the plain
delete-and-insert every other output gets, because the inbox holds operators' work.
What a run (or a rerun of the same logical date) does to the inbox:

* a new key → inserted as ``quarantined``, ``_dlq_attempts`` 1;
* an existing key (a rerun): the row's run linkage (``_run_id``) and the run's evidence
  about the record as read (``_failed_rules``, ``_rescued_data``, ``_raw``) are refreshed;
  the live DLQ fields (``_reason``, ``_dlq_failed_rules``, ``_dlq_rescued_data``) only
  while nobody has touched the row (``quarantined`` at attempt 1). Declared values,
  ``_row_data``, status and attempts are never reset: an operator's edits and decisions
  (fixed / recycled / rejected) survive reruns;
* a key of this logical date that the run no longer quarantines (the input or the rules
  changed) is *superseded*: the run's outcome for that record replaces it. The row leaves
  the inbox — and, if it had been recycled, its recycled copy leaves the clean table and
  its outbox entry goes too, so the record is counted exactly once — with a
  ``superseded`` audit row keeping its last status.

After the MERGE every inbox row of the logical date belongs to this run, so the publish
ledger (``raw = clean + quarantined + duplicates``, counted by ``_run_id``) still holds.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Protocol

from sqlglot import exp

from ..compile.outputs import RECYCLED_FROM, empty_like, replace_scope
from ..compile.render import col, ident, lit
from ..contract.loader import LoadedContract
from ..contract.models import Contract
from ..engines import Engine
from ..errors import LedgerError, LedgerViolation
from .audit import audit_insert, status_field, ts_literal, utcnow
from .canonical import row_json
from .keys import dlq_key
from .tables import OUTBOX_COLUMNS, DlqTables, empty_select


class PublishingRun(Protocol):
    """What the inbox MERGE needs of a run (run/state.py's ``RunContext`` is one); the
    DLQ sits below the run layer and never imports it."""

    loaded: LoadedContract
    engine: Engine
    partitions: list[str]
    run_id: str
    counts: dict[str, Any]

    @property
    def contract(self) -> Contract: ...

    @property
    def replace_run_id(self) -> str | None: ...


T_NEW = "_sg_dlq_new"
T_GONE = "_sg_dlq_gone"
RUN_ACTOR = "sluicegate run"

#: Refreshed on every rerun: which run holds the row, and what it found in the record.
EVIDENCE = ("_run_id", "_failed_rules", "_rescued_data", "_raw")
#: Refreshed only while no operator or recycle has touched the row.
LIVE = ("_reason", "_dlq_failed_rules", "_dlq_rescued_data")


def inbox_select(
    quarantine: exp.Select,
    contract: Contract,
    partitions: list[str],
    dialect: str,
    now: dt.datetime,
) -> exp.Select:
    """The run's quarantine projection plus the DLQ columns (key, status, row JSON …)."""
    source = contract.source_name
    inner = exp.select(
        exp.Column(this=exp.Star(), table=ident("_q")),
        exp.alias_(row_json(contract, partitions, dialect, "_q"), ident("_row_data"), copy=False),
    ).from_(exp.Subquery(this=quarantine, alias=exp.TableAlias(this=ident("_q"))), copy=False)
    names = quarantine.named_selects
    return exp.select(
        *[col(n, "_j") for n in names],
        exp.alias_(dlq_key(source, col("_row_data", "_j"), dialect), ident("_dlq_sk"), copy=False),
        exp.alias_(exp.cast(lit(source), "VARCHAR"), ident("_dlq_source_table")),
        exp.alias_(exp.cast(lit("quarantined"), "VARCHAR"), ident("_dlq_status")),
        exp.alias_(exp.cast(exp.Literal.number(1), "INTEGER"), ident("_dlq_attempts")),
        exp.alias_(ts_literal(now), ident("_dlq_timestamp")),
        exp.alias_(col("_failed_rules", "_j"), ident("_dlq_failed_rules")),
        exp.alias_(exp.cast(col("_rescued_data", "_j"), "VARCHAR"), ident("_dlq_rescued_data")),
        col("_row_data", "_j"),
    ).from_(exp.Subquery(this=inner, alias=exp.TableAlias(this=ident("_j"))), copy=False)


def _keys_of(table: str) -> exp.Select:
    return exp.select(col("_dlq_sk")).from_(exp.Table(this=ident(table)))


def _in_keys(column: str, table: str) -> exp.Expression:
    return exp.In(this=col(column), query=exp.Subquery(this=_keys_of(table)))


def ensure_outbox(eng: Engine, tables: DlqTables) -> None:
    if not eng.table_exists(tables.outbox):
        eng.create_table_as(tables.outbox, empty_select(OUTBOX_COLUMNS))


def merge_inbox(ctx: PublishingRun, quarantine: exp.Select) -> dict[str, Any]:
    """Write the run's quarantined rows into the inbox (see the module docstring).

    Runs inside the caller's transaction. Returns counts for the run metrics.
    """
    eng = ctx.engine
    contract = ctx.contract
    tables = DlqTables.of(contract)
    day = ctx.loaded.logical_date
    now = utcnow()
    select = inbox_select(quarantine, contract, ctx.partitions, eng.dialect, now)
    eng.create_table_as(T_NEW, select, temporary=True)
    new = exp.Table(this=ident(T_NEW))
    created = not eng.table_exists(tables.inbox)
    if created:
        eng.create_table_as(tables.inbox, empty_like(exp.select(exp.Star()).from_(new.copy())))
    ensure_outbox(eng, tables)

    if created:  # an inbox created just now: no key can match, no row be superseded
        n, distinct = (int(v) for v in eng.fetch(_key_counts())[0])
        matched = superseded = 0
    else:
        # the date's rows, or only this micro-batch's (docs/streaming.md)
        on_day = replace_scope(day, ctx.replace_run_id)
        gone = (
            exp.select(col("_dlq_sk"), col("_dlq_status"))
            .from_(exp.Table(this=ident(tables.inbox)))
            .where(exp.and_(on_day, exp.Not(this=_in_keys("_dlq_sk", T_NEW))))
        )
        eng.create_table_as(T_GONE, gone, temporary=True)
        n, distinct, matched, superseded = (int(v) for v in eng.fetch(_merge_counts(tables))[0])
    if distinct != n:
        raise LedgerError(
            [LedgerViolation("dlq_key", f"{n - distinct} DLQ keys collide within one run")]
        )
    if superseded:
        audit_insert(
            eng,
            tables,
            T_GONE,
            action="superseded",
            by=RUN_ACTOR,
            at=now,
            before=[status_field(col("_dlq_status"))],
            after=None,
            run_id=ctx.run_id,
        )
        for table, column in (
            (tables.clean, RECYCLED_FROM),
            (tables.outbox, "_dlq_sk"),
            (tables.inbox, "_dlq_sk"),
        ):
            eng.execute(exp.delete(exp.Table(this=ident(table)), where=_in_keys(column, T_GONE)))

    eng.execute(merge_statement(tables.inbox, T_NEW, list(select.named_selects)))
    out = {"inserted": n - matched, "rerun": matched, "superseded": superseded}
    ctx.counts.dlq = out
    return out


def _key_counts() -> exp.Select:
    """The run's rows and their distinct keys (two keys alike would collide in the inbox)."""
    return exp.select(
        exp.func("COUNT", exp.Star()),
        exp.func("COUNT", exp.Distinct(expressions=[col("_dlq_sk")])),
    ).from_(exp.Table(this=ident(T_NEW)))


def _merge_counts(tables: DlqTables) -> exp.Select:
    """The run's rows, their distinct keys, those already in the inbox (a rerun) and the
    date's inbox rows the run no longer quarantines (superseded), in one query: on Spark
    every query pays planning and code generation. The superseded rows leave the inbox
    before the MERGE, but none of their keys is the run's, so counting the rerun keys
    before they leave gives the same number."""
    new = exp.Table(this=ident(T_NEW))

    def scalar(query: exp.Select) -> exp.Subquery:
        return exp.Subquery(this=query)

    return exp.select(
        exp.func("COUNT", exp.Star()),
        exp.func("COUNT", exp.Distinct(expressions=[col("_dlq_sk")])),
        scalar(
            exp.select(exp.func("COUNT", exp.Star()))
            .from_(new.copy())
            .where(_in_keys("_dlq_sk", tables.inbox))
        ),
        scalar(exp.select(exp.func("COUNT", exp.Star())).from_(T_GONE)),
    ).from_(new.copy())


def merge_statement(inbox: str, source: str, columns: list[str]) -> exp.Merge:
    """MERGE the run's rows into the inbox on ``_dlq_sk`` (rules in the module docstring)."""
    t, s = "_t", "_s"

    def sets(names: tuple[str, ...]) -> exp.Update:
        return exp.Update(expressions=[exp.EQ(this=col(n), expression=col(n, s)) for n in names])

    untouched = exp.and_(
        exp.EQ(this=col("_dlq_status", t), expression=lit("quarantined")),
        exp.EQ(this=col("_dlq_attempts", t), expression=exp.Literal.number(1)),
    )
    whens = [
        exp.When(matched=True, source=False, condition=untouched, then=sets(EVIDENCE + LIVE)),
        exp.When(matched=True, source=False, then=sets(EVIDENCE)),
        exp.When(
            matched=False,
            source=False,
            then=exp.Insert(
                this=exp.Tuple(expressions=[col(n) for n in columns]),
                expression=exp.Tuple(expressions=[col(n, s) for n in columns]),
            ),
        ),
    ]
    return exp.Merge(
        this=exp.Table(this=ident(inbox), alias=exp.TableAlias(this=ident(t))),
        using=exp.Table(this=ident(source), alias=exp.TableAlias(this=ident(s))),
        on=exp.EQ(this=col("_dlq_sk", t), expression=col("_dlq_sk", s)),
        whens=exp.Whens(expressions=whens),
    )
