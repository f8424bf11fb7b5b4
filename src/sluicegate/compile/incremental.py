"""The SQL of incremental runs as sqlglot trees (no engine; run/incremental.py runs them).

Three kinds of statement serve a micro-batch (docs/streaming.md has the argument):

* the **processed-file ledger** (:data:`FILES_TABLE`): its columns, the MERGE of a
  batch's files (keyed ``(contract, path)``, a rerun replacing its own run id's rows),
  the read-back count and the per-contract listing;
* the **date's kept keys** (:func:`prior_select`): one row per key among the rows earlier
  micro-batches published, with the lineage of the record that won;
* **dedupe against them** (:func:`against_prior`): the ranked relation with every row
  whose key an earlier batch kept turned into a duplicate of that record.

Kept apart from the orchestration so each tree can be rendered for every dialect and
checked without a run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from sqlglot import exp

from .facts import empty_select, merge_rows
from .outputs import RECYCLED_FROM
from .render import col, ident, lit

#: The processed-file ledger: one row per (contract, path) ever processed incrementally.
FILES_TABLE = "_sluicegate_files"
FILE_COLUMNS: tuple[tuple[str, str], ...] = (
    ("contract", "VARCHAR"),
    ("path", "VARCHAR"),
    ("size", "BIGINT"),
    ("mtime", "DOUBLE"),  # seconds since the epoch, as bound: a cheap "maybe changed" test
    ("sha256", "VARCHAR"),
    ("records", "BIGINT"),
    ("run_id", "VARCHAR"),
    ("logical_date", "DATE"),
    ("status", "VARCHAR"),  # the micro-batch's verdict: pass | warn | fail
    ("engine", "VARCHAR"),
    ("processed_at", "TIMESTAMP"),
)
FILE_KEY = ("contract", "path")
#: The earlier micro-batches' kept rows of the date (key + lineage), a TEMP table.
T_PRIOR = "_sg_prior_kept"


def _of_contract(contract: str) -> exp.EQ:
    return exp.EQ(this=col("contract"), expression=lit(contract))


# -- the processed-file ledger ---------------------------------------------------------


def empty_files() -> exp.Select:
    """The ledger's empty typed relation (to create the table)."""
    return empty_select(FILE_COLUMNS)


def merge_files(rows: Sequence[Mapping[str, Any]], run_id: str) -> exp.Merge:
    """MERGE a batch's files into the ledger; a rerun of ``run_id`` replaces its rows."""
    return merge_rows(FILES_TABLE, FILE_COLUMNS, FILE_KEY, rows, scope=("run_id", run_id))


def count_of_run(contract: str, run_id: str) -> exp.Select:
    """How many ledger rows carry ``run_id`` (the read-back after the MERGE)."""
    return (
        exp.select(exp.func("COUNT", exp.Star()))
        .from_(exp.Table(this=ident(FILES_TABLE)))
        .where(exp.and_(_of_contract(contract), exp.EQ(this=col("run_id"), expression=lit(run_id))))
    )


def ledger_select(contract: str) -> exp.Select:
    """Every processed file of ``contract``."""
    return (
        exp.select(*[col(n) for n, _t in FILE_COLUMNS])
        .from_(exp.Table(this=ident(FILES_TABLE)))
        .where(_of_contract(contract))
        .order_by(col("path"))
    )


def files_per_run(contract: str) -> exp.Select:
    """``(run_id, files, records)`` per micro-batch of ``contract``."""
    return (
        exp.select(col("run_id"), exp.func("COUNT", exp.Star()), exp.func("SUM", col("records")))
        .from_(exp.Table(this=ident(FILES_TABLE)))
        .where(_of_contract(contract))
        .group_by(col("run_id"))
    )


def run_records(runs_table: str, contract: str) -> exp.Select:
    """``(run_id, status, published_at)`` of every run record of ``contract``."""
    return (
        exp.select(col("run_id"), col("status"), col("published_at"))
        .from_(exp.Table(this=ident(runs_table)))
        .where(_of_contract(contract))
    )


# -- dedupe across micro-batches --------------------------------------------------------


def prior_select(
    keys: Sequence[str],
    logical_date: str,
    tables: Sequence[str],
    clean: str,
    batch: str | None = None,
) -> exp.Select:
    """One kept row per key among the date's published rows of ``tables`` (key, lineage).

    Clean rows recycled from the DLQ (in ``clean``) are copies of inbox rows, not
    records: left out. ``batch``: a relation with the key columns (the micro-batch's
    typed rows) — only keys it holds are numbered. :func:`against_prior` joins on the key
    alone, so the rows left out could never match; numbering the whole date's rows grew
    every batch with the day's data (a window over all of them).
    """
    keys = list(keys)
    day = exp.EQ(this=col("_logical_date"), expression=exp.cast(lit(logical_date), "DATE"))
    keyed = [exp.Not(this=exp.Is(this=col(k), expression=exp.null())) for k in keys]
    if batch is not None:
        own = exp.select(*[col(k) for k in keys]).from_(exp.Table(this=ident(batch)))
        probe = col(keys[0]) if len(keys) == 1 else exp.Tuple(expressions=[col(k) for k in keys])
        keyed.append(exp.In(this=probe, query=exp.Subquery(this=own)))
    parts = []
    for t in tables:
        where = exp.and_(day.copy(), *[k.copy() for k in keyed])
        if t == clean:
            where = exp.and_(where, exp.Is(this=col(RECYCLED_FROM), expression=exp.null()))
        parts.append(
            exp.select(*[col(k) for k in keys], col("_source_file"), col("_source_line"))
            .from_(exp.Table(this=ident(t)))
            .where(where)
        )
    union: exp.Query = parts[0]
    for part in parts[1:]:
        union = exp.union(union, part, distinct=False)
    window = exp.Window(
        this=exp.RowNumber(),
        partition_by=[col(k) for k in keys],
        order=exp.Order(
            expressions=[
                exp.Ordered(this=col("_source_file"), nulls_first=False),
                exp.Ordered(this=col("_source_line"), nulls_first=False),
            ]
        ),
    )
    numbered = exp.select(
        *[col(k) for k in keys],
        col("_source_file"),
        col("_source_line"),
        exp.alias_(window, ident("_n")),
    ).from_(exp.Subquery(this=union, alias=exp.TableAlias(this=ident("_u"))))
    return (
        exp.select(
            *[col(k) for k in keys],
            col("_source_file"),
            col("_source_line"),
            exp.alias_(exp.true(), ident("_sg_prior")),
        )
        .from_(exp.Subquery(this=numbered, alias=exp.TableAlias(this=ident("_w"))))
        .where(exp.EQ(this=col("_n"), expression=exp.Literal.number(1)))
    )


def against_prior(ranked: exp.Select, names: Sequence[str], keys: Sequence[str]) -> exp.Select:
    """``ranked`` (columns ``names``) with the rows whose key is in :data:`T_PRIOR` made
    duplicates: ``_rn + 1`` (so none of them is kept) and the kept lineage of the earlier
    record — what a single run over both batches records when the earlier record comes
    first in the contract's order."""
    r, p = "_rk", "_pk"
    hit = exp.Not(this=exp.Is(this=col("_sg_prior", p), expression=exp.null()))

    def pick(prior: exp.Expression, own: exp.Expression) -> exp.Expression:
        return exp.Case(ifs=[exp.If(this=hit.copy(), true=prior)], default=own)

    on = exp.and_(
        exp.Not(this=col("_corrupt", r)),
        *[exp.EQ(this=col(k, r), expression=col(k, p)) for k in keys],
    )
    return (
        exp.select(
            *[col(n, r) for n in names],
            exp.alias_(
                pick(exp.Add(this=col("_rn", r), expression=exp.Literal.number(1)), col("_rn", r)),
                ident("_rn"),
            ),
            exp.alias_(
                pick(col("_source_file", p), col("_kept_source_file", r)),
                ident("_kept_source_file"),
            ),
            exp.alias_(
                pick(col("_source_line", p), col("_kept_source_line", r)),
                ident("_kept_source_line"),
            ),
        )
        .from_(exp.Subquery(this=ranked, alias=exp.TableAlias(this=ident(r))))
        .join(
            exp.Table(this=ident(T_PRIOR), alias=exp.TableAlias(this=ident(p))),
            on=on,
            join_type="LEFT",
        )
    )
