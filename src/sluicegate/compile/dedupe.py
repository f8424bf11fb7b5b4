"""Deterministic dedupe (stage 3): keep the first row per key by a total order.

The order is the contract's ``order_by`` (each term NULLS LAST unless it says otherwise),
then ``_source_file``, ``_source_line`` — a total order, so reruns keep the same row.
Every parsed record takes part, type mismatches included (a resent bad row is still a
duplicate). Corrupt records have no key and are never duplicates; nor are records whose
key has a NULL part (missing or not castable): NULL is not equal to NULL.

Only the rows of keys that occur more than once are ranked (about 1% of a typical feed):
:func:`ranking_select` sorts that small relation, and :func:`ranked_select` joins its
``_rn`` back on lineage; every other row passes through with ``_rn = 1``.
"""

from __future__ import annotations

from sqlglot import exp

from ..contract.models import Dedupe
from .render import col, ident

NOT_RANKED = 1


def order_terms(dedupe: Dedupe, table: str | None = None) -> list[exp.Ordered]:
    """The total order: declared terms (NULLS LAST by default), then lineage."""
    terms = []
    for text in dedupe.order_by:
        o = exp.maybe_parse(text, into=exp.Ordered, dialect="duckdb").copy()
        if "nulls" not in text.lower():
            o.set("nulls_first", False)
        o.set("this", col(o.this.name, table))
        terms.append(o)
    terms += [
        exp.Ordered(this=col("_source_file", table), nulls_first=False),
        exp.Ordered(this=col("_source_line", table), nulls_first=False),
    ]
    return terms


def repeated_select(typed_table: str, dedupe: Dedupe) -> exp.Select:
    """The keys that occur more than once (``_dk0`` ...), corrupt rows and keys with a
    NULL part left out (never duplicates).

    The run keeps it as a small table of its own: its size is then known, so Spark joins
    it to the typed rows by broadcast instead of shuffling a million rows by key (with
    adaptive execution off, an inline aggregate's size is estimated from its input)."""
    keys = list(dedupe.key)
    keyed = exp.and_(
        exp.Not(this=col("_corrupt")),
        *[exp.Not(this=exp.Is(this=col(k), expression=exp.null())) for k in keys],
    )
    return (
        exp.select(*[exp.alias_(col(k), ident(f"_dk{i}")) for i, k in enumerate(keys)])
        .from_(exp.to_table(typed_table))
        .where(keyed)
        .group_by(*[col(k) for k in keys])
        .having(exp.GT(this=exp.func("COUNT", exp.Star()), expression=exp.Literal.number(1)))
    )


def ranking_select(
    typed_table: str, dedupe: Dedupe, repeated_table: str | None = None
) -> exp.Select:
    """Lineage, ``_rn`` and the kept row's lineage of the rows whose key occurs more than once.

    ``repeated_table`` is a materialized :func:`repeated_select`; without it the keys are
    an inline subquery."""
    keys = list(dedupe.key)
    repeated: exp.Expression = (
        exp.Table(this=ident(repeated_table), alias=exp.TableAlias(this=ident("_d")))
        if repeated_table
        else exp.Subquery(
            this=repeated_select(typed_table, dedupe), alias=exp.TableAlias(this=ident("_d"))
        )
    )
    on = exp.and_(
        exp.Not(this=col("_corrupt", "_t")),
        *[exp.EQ(this=col(k, "_t"), expression=col(f"_dk{i}", "_d")) for i, k in enumerate(keys)],
    )
    window = exp.Window(
        partition_by=[col(k, "_t") for k in keys],
        order=exp.Order(expressions=order_terms(dedupe, "_t")),
    )

    def over(fn: exp.Expression) -> exp.Expression:
        w = window.copy()
        w.set("this", fn)
        return w

    return (
        exp.select(
            col("_source_file", "_t"),
            col("_source_line", "_t"),
            exp.alias_(over(exp.RowNumber()), ident("_rn")),
            exp.alias_(
                over(exp.FirstValue(this=col("_source_file", "_t"))), ident("_kept_source_file")
            ),
            exp.alias_(
                over(exp.FirstValue(this=col("_source_line", "_t"))), ident("_kept_source_line")
            ),
        )
        .from_(exp.Table(this=ident(typed_table), alias=exp.TableAlias(this=ident("_t"))))
        .join(
            repeated,
            on=on,
            join_type="INNER",
        )
    )


def ranked_select(
    typed_table: str, dedupe: Dedupe | None, ranking_table: str | None = None
) -> exp.Select:
    """Every typed row plus ``_rn`` (1 = kept) and the lineage of the kept row of its key.

    Rows of keys that occur once (or that have no key) get ``_rn = 1`` and NULL kept
    lineage. ``ranking_table`` is a materialized :func:`ranking_select` (the run keeps it
    as a small table and this relation as a view); without it the ranking is inline.
    """
    t = exp.Table(this=ident(typed_table), alias=exp.TableAlias(this=ident("_t")))
    t_star = exp.Column(this=exp.Star(), table=ident("_t"))
    if dedupe is None:
        return exp.select(
            t_star,
            exp.alias_(exp.Literal.number(NOT_RANKED), ident("_rn")),
            exp.alias_(exp.cast(exp.null(), "VARCHAR"), ident("_kept_source_file")),
            exp.alias_(exp.cast(exp.null(), "BIGINT"), ident("_kept_source_line")),
        ).from_(t)
    ranking: exp.Expression = (
        exp.Table(this=ident(ranking_table), alias=exp.TableAlias(this=ident("_r")))
        if ranking_table
        else exp.Subquery(
            this=ranking_select(typed_table, dedupe), alias=exp.TableAlias(this=ident("_r"))
        )
    )
    return (
        exp.select(
            t_star,
            exp.alias_(
                exp.func("COALESCE", col("_rn", "_r"), exp.Literal.number(NOT_RANKED)),
                ident("_rn"),
            ),
            exp.alias_(col("_kept_source_file", "_r"), ident("_kept_source_file")),
            exp.alias_(col("_kept_source_line", "_r"), ident("_kept_source_line")),
        )
        .from_(t)
        .join(
            ranking,
            on=exp.and_(
                exp.EQ(this=col("_source_file", "_t"), expression=col("_source_file", "_r")),
                exp.EQ(this=col("_source_line", "_t"), expression=col("_source_line", "_r")),
            ),
            join_type="LEFT",
        )
    )
