"""Deterministic dedupe (stage 3): keep the first row per key by a total order.

The order is the contract's ``order_by`` (NULLS LAST unless stated), then
``_source_file``, ``_source_line`` — a total order, so reruns keep the same row.
Corrupt records have no key and are never duplicates; nor are records whose key has a
NULL part (missing or not castable).
"""

from __future__ import annotations

from sqlglot import exp

from ..contract.models import Dedupe
from .render import col, ident

NOT_RANKED = 1


def order_terms(dedupe: Dedupe) -> list[exp.Ordered]:
    """The total order: declared terms (NULLS LAST by default), then lineage."""
    terms = []
    for text in dedupe.order_by:
        o = exp.maybe_parse(text, into=exp.Ordered, dialect="duckdb").copy()
        if "nulls" not in text.lower():
            o.set("nulls_first", False)
        o.set("this", col(o.this.name))
        terms.append(o)
    terms += [
        exp.Ordered(this=col("_source_file"), nulls_first=False),
        exp.Ordered(this=col("_source_line"), nulls_first=False),
    ]
    return terms


def ranked_select(typed_table: str, dedupe: Dedupe | None) -> exp.Select:
    """Every typed row plus ``_rn`` (1 = kept) and the lineage of the kept row of its key."""
    if dedupe is None:
        return exp.select(
            exp.Star(),
            exp.alias_(exp.Literal.number(1), "_rn"),
            exp.alias_(exp.cast(exp.null(), "VARCHAR"), "_kept_source_file"),
            exp.alias_(exp.cast(exp.null(), "BIGINT"), "_kept_source_line"),
        ).from_(exp.to_table(typed_table))
    keys = [col(k) for k in dedupe.key]
    window = exp.Window(
        partition_by=[k.copy() for k in keys],
        order=exp.Order(expressions=order_terms(dedupe)),
    )
    unkeyed = exp.or_(
        col("_corrupt"), *[exp.Is(this=k.copy(), expression=exp.null()) for k in keys]
    )

    def over(fn: exp.Expression) -> exp.Expression:
        w = window.copy()
        w.set("this", fn)
        return w

    rn = exp.Case(
        ifs=[exp.If(this=unkeyed, true=exp.Literal.number(NOT_RANKED))],
        default=over(exp.RowNumber()),
    )
    kept_file = exp.Case(
        ifs=[exp.If(this=unkeyed.copy(), true=exp.null())],
        default=over(exp.FirstValue(this=col("_source_file"))),
    )
    kept_line = exp.Case(
        ifs=[exp.If(this=unkeyed.copy(), true=exp.null())],
        default=over(exp.FirstValue(this=col("_source_line"))),
    )
    return exp.select(
        exp.Star(),
        exp.alias_(rn, ident("_rn")),
        exp.alias_(kept_file, ident("_kept_source_file")),
        exp.alias_(kept_line, ident("_kept_source_line")),
    ).from_(exp.to_table(typed_table))
