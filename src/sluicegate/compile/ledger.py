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


def lineage_overlaps(tables: list[str], run_id: str) -> exp.Select:
    """Number of (file, line) pairs of this run that appear more than once across ``tables``."""
    parts = [
        exp.select(col("_source_file"), col("_source_line"))
        .from_(exp.Table(this=ident(t)))
        .where(exp.EQ(this=col("_run_id"), expression=lit(run_id)))
        for t in tables
    ]
    union: exp.Expression = parts[0]
    for p in parts[1:]:
        union = exp.union(union, p, distinct=False)
    grouped = (
        exp.select(col("_source_file"), col("_source_line"))
        .from_(exp.Subquery(this=union, alias=exp.TableAlias(this=ident("_u"))))
        .group_by(col("_source_file"), col("_source_line"))
        .having(exp.GT(this=exp.func("COUNT", exp.Star()), expression=exp.Literal.number(1)))
    )
    return exp.select(exp.func("COUNT", exp.Star())).from_(
        exp.Subquery(this=grouped, alias=exp.TableAlias(this=ident("_g")))
    )


def lineage_files(tables: list[str], run_id: str) -> exp.Select:
    """``(_source_file, records)`` of this run across ``tables``: what the outputs say they read.

    The ledger compares it with the binding file by file, so a reader that read some other
    file (a glob re-expanded, a path substituted) cannot balance by coincidence.
    """
    parts = [
        exp.select(col("_source_file"))
        .from_(exp.Table(this=ident(t)))
        .where(exp.EQ(this=col("_run_id"), expression=lit(run_id)))
        for t in tables
    ]
    union = exp.union(*parts, distinct=False) if len(parts) > 1 else parts[0]
    return (
        exp.select(col("_source_file"), exp.func("COUNT", exp.Star()))
        .from_(exp.Subquery(this=union, alias=exp.TableAlias(this=ident("_u"))))
        .group_by(col("_source_file"))
    )
