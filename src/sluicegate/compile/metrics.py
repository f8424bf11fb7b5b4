"""One aggregate per relation for run metrics: no repeated full-table scans."""

from __future__ import annotations

from sqlglot import exp

from .render import col, ident, lit
from .route import Check
from .rules import CompiledRule


def _count_if(cond: exp.Expression) -> exp.Expression:
    """``COALESCE(COUNT_IF(cond), 0)``: rows where ``cond`` is true (NULL is not).

    DuckDB and Spark count natively — on DuckDB ~20 % cheaper than ``SUM(CASE WHEN cond
    THEN 1 ELSE 0 END)`` (a run's drift counts over 1M typed rows: 54 → 42 ms); a dialect without
    ``COUNT_IF`` gets that SUM from sqlglot, whose NULL over no rows the COALESCE turns
    into 0. Built from the node classes: exp.func() looks the name up and deep-copies its
    arguments, ~3 ms per call — a second of CPU for a 1,000-rule contract's counts."""
    return exp.Coalesce(this=exp.CountIf(this=cond), expressions=[exp.Literal.number(0)])


def routed_counts(
    routed: str, checks: list[Check], rules: list[CompiledRule]
) -> tuple[exp.Select, list[str]]:
    """Counts over the routed rows: total, clean, by reason, failures per rule."""
    names = ["routed", "clean"]
    outs: list[exp.Expression] = [exp.func("COUNT", exp.Star()), _count_if(col("_ok"))]
    for c in checks:
        if c.routes:
            names.append(f"reason:{c.name}")
            outs.append(_count_if(exp.EQ(this=col("_reason"), expression=lit(c.name))))
    for c in checks:
        names.append(f"failed:{c.name}")
        outs.append(_count_if(exp.Not(this=col(c.flag))))
    # every tree here is new: no copies (a builder copies its whole instance by default)
    return exp.select(
        *[exp.alias_(o, ident(f"c{i}"), copy=False) for i, o in enumerate(outs)]
    ).from_(exp.to_table(routed), copy=False), names


def ranked_counts(ranked: str, columns: list[str]) -> tuple[exp.Select, list[str]]:
    """Counts over every parsed record: duplicates, corrupt, and per-column drift signals."""
    names = ["parsed", "duplicates", "corrupt", "undeclared_rows"]
    obj = exp.Not(this=col("_corrupt"))
    outs: list[exp.Expression] = [
        exp.func("COUNT", exp.Star()),
        _count_if(exp.GT(this=col("_rn"), expression=exp.Literal.number(1))),
        _count_if(col("_corrupt")),
        _count_if(exp.Not(this=exp.Is(this=col("_undeclared"), expression=exp.null()))),
    ]
    for i, c in enumerate(columns):
        names += [f"present:{c}", f"mismatch:{c}", f"nonnull:{c}"]
        outs += [
            _count_if(exp.and_(obj.copy(), exp.Not(this=col(f"_a{i}")))),
            _count_if(col(f"_x{i}")),
            _count_if(exp.Not(this=exp.Is(this=col(c), expression=exp.null()))),
        ]
    return exp.select(
        *[exp.alias_(o, ident(f"c{i}"), copy=False) for i, o in enumerate(outs)]
    ).from_(exp.to_table(ranked), copy=False), names


def undeclared_fields(ranked: str, dialect: str) -> exp.Select:
    """Undeclared field names with the number of records carrying each."""
    if dialect == "duckdb":
        keys = exp.Unnest(
            expressions=[exp.Anonymous(this="json_keys", expressions=[col("_undeclared")])]
        )
    elif dialect == "spark":
        keys = exp.Explode(
            this=exp.Anonymous(this="json_object_keys", expressions=[col("_undeclared")])
        )
    else:
        raise ValueError(dialect)
    inner = (
        exp.select(exp.alias_(keys, ident("k")))
        .from_(exp.to_table(ranked))
        .where(exp.Not(this=exp.Is(this=col("_undeclared"), expression=exp.null())))
    )
    return (
        exp.select(col("k"), exp.func("COUNT", exp.Star()))
        .from_(exp.Subquery(this=inner, alias=exp.TableAlias(this=ident("_u"))))
        .group_by(col("k"))
        .order_by(col("k"))
    )
