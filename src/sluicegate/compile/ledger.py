"""Queries that prove the ledger from the written tables."""

from __future__ import annotations

from sqlglot import exp

from .render import col, ident, lit


def count_run(table: str, run_id: str) -> exp.Select:
    """Rows of ``table`` written by ``run_id``."""
    return (
        exp.select(exp.func("COUNT", exp.Star()))
        .from_(exp.Table(this=ident(table)))
        .where(exp.EQ(this=col("_run_id"), expression=lit(run_id)))
    )


def _run_lineage(tables: list[str], run_id: str, *columns: str) -> exp.Subquery:
    """``columns`` of this run's rows across ``tables`` (UNION ALL), as subquery ``_u``."""
    parts = [
        exp.select(*[col(c) for c in columns])
        .from_(exp.Table(this=ident(t)))
        .where(exp.EQ(this=col("_run_id"), expression=lit(run_id)))
        for t in tables
    ]
    union: exp.Expression = parts[0]
    for p in parts[1:]:
        union = exp.union(union, p, distinct=False)
    return exp.Subquery(this=union, alias=exp.TableAlias(this=ident("_u")))


def lineage_overlaps(tables: list[str], run_id: str) -> exp.Select:
    """Extra copies of this run's records across ``tables``: rows minus distinct
    (file, line) pairs, 0 when every record is in exactly one output once.

    Any engine; where the engine has bitmap aggregates, :func:`lineage_bitmaps` proves the
    same per file without hashing every pair."""
    grouped = (
        exp.select(exp.alias_(exp.func("COUNT", exp.Star()), ident("_c")))
        .from_(_run_lineage(tables, run_id, "_source_file", "_source_line"))
        .group_by(col("_source_file"), col("_source_line"))
        .having(exp.GT(this=exp.func("COUNT", exp.Star()), expression=exp.Literal.number(1)))
    )
    extra = exp.Sub(this=col("_c"), expression=exp.Literal.number(1))
    return exp.select(exp.func("COALESCE", exp.func("SUM", extra), exp.Literal.number(0))).from_(
        exp.Subquery(this=grouped, alias=exp.TableAlias(this=ident("_g")))
    )


def lineage_range(tables: list[str], run_id: str) -> exp.Select:
    """``(lowest line, highest line, distinct files)`` of this run across ``tables``: the
    size of the bitmaps :func:`lineage_bitmaps` would build (NULLs when no row)."""
    return exp.select(
        exp.func("MIN", col("_source_line")),
        exp.func("MAX", col("_source_line")),
        exp.func("COUNT", exp.Distinct(expressions=[col("_source_file")])),
    ).from_(_run_lineage(tables, run_id, "_source_file", "_source_line"))


def lineage_bitmaps(tables: list[str], run_id: str, low: int, high: int) -> exp.Select:
    """``(_source_file, records, extra copies)`` of this run across ``tables``, from one
    bitmap of line numbers per file (DuckDB ``BITSTRING_AGG``): a file's rows minus the
    bits set is how many of its lines were written more than once.

    It answers :func:`lineage_files` and :func:`lineage_overlaps` in one scan without a
    hash table of every (file, line) pair. ``low``/``high`` bound every line of the run
    (:func:`lineage_range`); each file's bitmap takes ``high - low + 1`` bits.
    """
    rows = exp.func("COUNT", exp.Star())
    bits = exp.func(
        "BIT_COUNT",
        exp.func("BITSTRING_AGG", col("_source_line"), lit(low), lit(high)),
    )
    return (
        exp.select(col("_source_file"), rows, exp.Sub(this=rows.copy(), expression=bits))
        .from_(_run_lineage(tables, run_id, "_source_file", "_source_line"))
        .group_by(col("_source_file"))
    )


def lineage_files(tables: list[str], run_id: str) -> exp.Select:
    """``(_source_file, records)`` of this run across ``tables``: what the outputs say they read.

    The ledger compares it with the binding file by file, so a reader that read some other
    file (a glob re-expanded, a path substituted) cannot balance by coincidence.
    """
    return (
        exp.select(col("_source_file"), exp.func("COUNT", exp.Star()))
        .from_(_run_lineage(tables, run_id, "_source_file"))
        .group_by(col("_source_file"))
    )
