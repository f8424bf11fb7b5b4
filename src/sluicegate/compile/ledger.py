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


def _run_lineage(
    tables: list[str], run_id: str, *columns: str, tagged: bool = False
) -> exp.Subquery:
    """``columns`` of this run's rows across ``tables`` (UNION ALL), as subquery ``_u``;
    ``tagged`` adds ``_o``, the index in ``tables`` of the table a row came from."""
    parts = [
        exp.select(
            *[col(c) for c in columns],
            *([exp.alias_(exp.Literal.number(i), ident("_o"))] if tagged else []),
        )
        .from_(exp.Table(this=ident(t)))
        .where(exp.EQ(this=col("_run_id"), expression=lit(run_id)))
        for i, t in enumerate(tables)
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
    """``(_source_file, records, extra copies, rows of each of tables…)`` of this run across
    ``tables``, from one bitmap of line numbers per file (DuckDB ``BITSTRING_AGG``): a
    file's rows minus the bits set is how many of its lines were written more than once.

    It answers what :func:`lineage_summary` does in one scan without a hash table of
    every (file, line) pair. ``low``/``high`` bound every line of the run
    (:func:`lineage_range`); each file's bitmap takes ``high - low + 1`` bits.
    """
    rows = exp.func("COUNT", exp.Star())
    bits = exp.func(
        "COALESCE",
        exp.func(
            "BIT_COUNT",
            exp.func("BITSTRING_AGG", col("_source_line"), lit(low), lit(high)),
        ),
        exp.Literal.number(0),
    )
    # lines that are NULL (never, by construction) are one more distinct value, as the
    # grouped pairs count them; BITSTRING_AGG skips them (NULL for a file of only NULLs)
    null_line = (
        exp.Case()
        .when(
            exp.LT(this=exp.func("COUNT", col("_source_line")), expression=rows.copy()),
            exp.Literal.number(1),
        )
        .else_(exp.Literal.number(0))
    )
    distinct = exp.Add(this=bits, expression=null_line)
    return (
        exp.select(
            col("_source_file"),
            rows,
            exp.Sub(this=rows.copy(), expression=exp.Paren(this=distinct)),
            *_per_table_rows(tables),
        )
        .from_(_run_lineage(tables, run_id, "_source_file", "_source_line", tagged=True))
        .group_by(col("_source_file"))
    )


def _per_table_rows(tables: list[str]) -> list[exp.Expression]:
    """``SUM(CASE WHEN _o = i THEN 1 ELSE 0 END)`` for each of ``tables``: its rows."""
    return [
        exp.func(
            "SUM",
            exp.Case()
            .when(exp.EQ(this=col("_o"), expression=exp.Literal.number(i)), exp.Literal.number(1))
            .else_(exp.Literal.number(0)),
        )
        for i in range(len(tables))
    ]


def lineage_summary(tables: list[str], run_id: str) -> exp.Select:
    """``(_source_file, records, extra copies, rows of each of tables…)`` of this run: what
    :func:`lineage_bitmaps` answers, for any engine, by grouping every (file, line) pair.

    One statement instead of a count per table, the extra copies (:func:`lineage_overlaps`)
    and a count per file: where each query pays planning and a job (Spark), the read-back
    scans the outputs once. The ledger compares the per-table counts with the bound raw
    count, and the per-file counts with the binding file by file, so a reader that read
    some other file (a glob re-expanded, a path substituted) cannot balance by
    coincidence."""
    sums = [exp.alias_(e, ident(f"_n{i}")) for i, e in enumerate(_per_table_rows(tables))]
    pairs = (
        exp.select(
            col("_source_file"), exp.alias_(exp.func("COUNT", exp.Star()), ident("_c")), *sums
        )
        .from_(_run_lineage(tables, run_id, "_source_file", "_source_line", tagged=True))
        .group_by(col("_source_file"), col("_source_line"))
    )
    extra = exp.func("SUM", exp.Sub(this=col("_c"), expression=exp.Literal.number(1)))
    return _per_file(pairs, extra, len(tables))


def lineage_bucket_bitmaps(tables: list[str], run_id: str) -> exp.Select:
    """What :func:`lineage_summary` answers, from bitmaps of line numbers (Spark 3.5+'s
    ``BITMAP_*`` functions): per file, one bitmap per bucket of 32,768 consecutive lines,
    so a file's rows minus its bits set is its extra copies — about half the cost of
    grouping every (file, line) pair, measured on a 1M-line run.

    Each line has exactly one (bucket, position), negative and zero lines included, so
    distinct lines are distinct bits. Lines that are NULL (never, by construction) form one
    group counted as one distinct value, as the grouped pairs count them."""
    line = col("_source_line")
    bucket = exp.func("BITMAP_BUCKET_NUMBER", line)
    bits = exp.func(
        "BITMAP_COUNT",
        exp.func("BITMAP_CONSTRUCT_AGG", exp.func("BITMAP_BIT_POSITION", line.copy())),
    )
    distinct = (
        exp.Case()
        .when(exp.Is(this=bucket.copy(), expression=exp.Null()), exp.Literal.number(1))
        .else_(bits)
    )
    sums = [exp.alias_(e, ident(f"_n{i}")) for i, e in enumerate(_per_table_rows(tables))]
    buckets = (
        exp.select(
            col("_source_file"),
            exp.alias_(exp.func("COUNT", exp.Star()), ident("_c")),
            exp.alias_(distinct, ident("_b")),
            *sums,
        )
        .from_(_run_lineage(tables, run_id, "_source_file", "_source_line", tagged=True))
        .group_by(col("_source_file"), bucket)
    )
    extra = exp.func("SUM", exp.Sub(this=col("_c"), expression=col("_b")))
    return _per_file(buckets, exp.alias_(extra, ident("_extra")), len(tables))


def _per_file(groups: exp.Select, extra: exp.Expression, n_tables: int) -> exp.Select:
    """``(_source_file, records, extra, rows of each table…)`` summed per file over
    ``groups`` (one row per file and pair or bucket, with ``_c`` rows and ``_n<i>``
    rows of table ``i``): the outer half of :func:`lineage_summary` and
    :func:`lineage_bucket_bitmaps`."""
    return (
        exp.select(
            col("_source_file"),
            exp.func("SUM", col("_c")),
            extra,
            *[exp.func("SUM", col(f"_n{i}")) for i in range(n_tables)],
        )
        .from_(exp.Subquery(this=groups, alias=exp.TableAlias(this=ident("_g"))))
        .group_by(col("_source_file"))
    )


def bucketed_overlaps(tables: list[str], run_id: str) -> exp.Select:
    """:func:`lineage_overlaps` (one number, 0 when no record is written twice) from
    :func:`lineage_bucket_bitmaps`: for an engine with Spark's ``BITMAP_*`` functions."""
    return exp.select(
        exp.func("COALESCE", exp.func("SUM", col("_extra")), exp.Literal.number(0))
    ).from_(
        exp.Subquery(
            this=lineage_bucket_bitmaps(tables, run_id), alias=exp.TableAlias(this=ident("_l"))
        )
    )
