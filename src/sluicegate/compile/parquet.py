"""Parquet rows → typed rows with the same outcome flags as the NDJSON reader.

Parquet values already have a physical type; each declared column is cast with the
same text rules as NDJSON (via its text form) so that ``"7"`` in a string column and ``7``
in an integer column behave as they would in a JSON feed. There are no corrupt
records in a readable Parquet file; a missing declared column is all-NULL and reported
as drift.
"""

from __future__ import annotations

from sqlglot import exp

from ..contract.models import TableSource
from .cast import cast_text
from .read import LINEAGE, partition_expr
from .render import col, ident, lit


def typed_from_parquet(
    table: str,
    source: TableSource,
    partitions: list[str],
    dialect: str,
    present: list[str] | None = None,
) -> exp.Select:
    names = list(source.columns)
    present_set = set(present) if present is not None else set(names)
    texts = {
        n: (exp.cast(col(n), "VARCHAR") if n in present_set else exp.cast(exp.null(), "VARCHAR"))
        for n in names
    }
    casts = [
        exp.alias_(cast_text(texts[n], s, dialect), ident(n)) for n, s in source.columns.items()
    ]
    inner = exp.select(
        *[col(c) for c in LINEAGE],
        *[exp.alias_(partition_expr(p), ident(p)) for p in partitions],
        *[exp.alias_(texts[n].copy(), ident(f"_s{i}")) for i, n in enumerate(names)],
        *casts,
    ).from_(exp.to_table(table))
    mism = [
        exp.and_(
            exp.Not(this=exp.Is(this=col(f"_s{i}"), expression=exp.null())),
            exp.Is(this=col(n), expression=exp.null()),
        )
        for i, n in enumerate(names)
    ]
    rescued = exp.JSONObject(
        expressions=[
            exp.JSONKeyValue(
                this=lit(n), expression=exp.Case(ifs=[exp.If(this=m.copy(), true=col(f"_s{i}"))])
            )
            for i, (n, m) in enumerate(zip(names, mism, strict=True))
        ]
    )
    any_m = exp.or_(*[m.copy() for m in mism])
    return exp.select(
        *[col(c) for c in LINEAGE],
        *[col(p) for p in partitions],
        *[col(n) for n in names],
        exp.alias_(exp.false(), ident("_corrupt")),
        exp.alias_(exp.cast(exp.null(), "VARCHAR"), ident("_raw")),
        exp.alias_(exp.paren(any_m), ident("_mismatch")),
        *[exp.alias_(exp.paren(m), ident(f"_x{i}")) for i, m in enumerate(mism)],
        *[
            exp.alias_(exp.false() if n in present_set else exp.true(), ident(f"_a{i}"))
            for i, n in enumerate(names)
        ],
        exp.alias_(exp.cast(exp.null(), "VARCHAR"), ident("_undeclared")),
        exp.alias_(
            exp.Case(ifs=[exp.If(this=any_m.copy(), true=exp.cast(rescued, "VARCHAR"))]),
            ident("_rescued_data"),
        ),
    ).from_(exp.Subquery(this=inner, alias=exp.TableAlias(this=ident("_p"))))
