"""Raw lines → typed rows with built-in outcome flags (stage 2: read permissively).

Engines load records as text with lineage (``_source_file``, ``_source_line``, ``_line``);
this module builds the query that validates, parses and casts them. Every record yields
exactly one output row, whatever it contains, so the ledger can never lose one here.

Output columns of :func:`typed_select`:

* lineage: ``_source_file``, ``_source_line``; Hive partition columns (text)
* every declared column, cast to its declared type (NULL when absent or not castable)
* ``_corrupt`` — the line is not a JSON object; ``_raw`` — the line text when corrupt
* ``_mismatch`` — some present value did not cast; ``_x<i>`` per declared column
* ``_a<i>`` — the key of declared column i is absent from the object
* ``_undeclared`` — JSON object of undeclared fields (NULL when none)
* ``_rescued_data`` — JSON object of undeclared fields + original text of mismatched fields
"""

from __future__ import annotations

from sqlglot import exp

from ..contract.models import ColumnSpec, TableSource
from .cast import cast_text
from .render import col, ident, lit

LINEAGE = ["_source_file", "_source_line"]


def json_path(name: str) -> str:
    return '$."' + name.replace('"', '\\"') + '"'


def _bracket(column: str, i: int, dialect: str) -> exp.Expression:
    # 1-based in DuckDB lists, 0-based in Spark arrays; sqlglot's offset handles the rest.
    return exp.Bracket(this=col(column), expressions=[exp.Literal.number(i + 1)], offset=1)


def _alias(e: exp.Expression, name: str) -> exp.Alias:
    return exp.alias_(e, ident(name), copy=False)


def partition_expr(name: str) -> exp.Expression:
    """Value of a Hive-style folder ``name=value`` in ``_source_file`` (NULL if absent)."""
    pattern = f"[/\\\\]{name}=([^/\\\\]*)[/\\\\]"
    extracted = exp.RegexpExtract(this=col("_source_file"), expression=lit(pattern), group=lit(1))
    return exp.Nullif(this=extracted, expression=lit(""))


def typed_select(
    lines_table: str,
    source: TableSource,
    partitions: list[str],
    dialect: str,
) -> exp.Select:
    """Build the typed relation for an NDJSON source loaded as text lines."""
    if dialect != "duckdb":
        raise NotImplementedError(f"NDJSON parsing is not compiled for dialect '{dialect}' yet")
    names = list(source.columns)
    specs: list[ColumnSpec] = list(source.columns.values())
    paths = exp.Array(expressions=[lit(json_path(n)) for n in names])

    is_obj = exp.Case(
        ifs=[
            exp.If(
                this=exp.Anonymous(this="json_valid", expressions=[col("_line")]),
                true=exp.EQ(
                    this=exp.Anonymous(this="json_type", expressions=[col("_line")]),
                    expression=lit("OBJECT"),
                ),
            )
        ],
        default=exp.false(),
    )
    j = exp.select(*[col(c) for c in LINEAGE], col("_line"), _alias(is_obj, "_obj")).from_(
        exp.to_table(lines_table)
    )

    def when_obj(e: exp.Expression) -> exp.Expression:
        return exp.Case(ifs=[exp.If(this=col("_obj"), true=e)])

    x = exp.select(
        *[col(c) for c in LINEAGE],
        col("_line"),
        col("_obj"),
        _alias(
            when_obj(exp.Anonymous(this="json_extract_string", expressions=[col("_line"), paths])),
            "_v",
        ),
        _alias(
            when_obj(exp.Anonymous(this="json_type", expressions=[col("_line"), paths.copy()])),
            "_jt",
        ),
        _alias(
            when_obj(
                exp.Anonymous(
                    this="json_merge_patch",
                    expressions=[
                        col("_line"),
                        exp.JSONObject(
                            expressions=[
                                exp.JSONKeyValue(this=lit(n), expression=exp.null()) for n in names
                            ]
                        ),
                    ],
                )
            ),
            "_und",
        ),
    ).from_(exp.Subquery(this=j, alias=exp.TableAlias(this=ident("_j"))))

    text_cols, nested, absent = [], [], []
    for i, _n in enumerate(names):
        jt = _bracket("_jt", i, dialect)
        is_nested = exp.In(this=jt, expressions=[lit("OBJECT"), lit("ARRAY")])
        text_cols.append(
            _alias(
                exp.Case(
                    ifs=[exp.If(this=is_nested, true=exp.null())],
                    default=_bracket("_v", i, dialect),
                ),
                f"_s{i}",
            )
        )
        nested.append(_alias(exp.func("COALESCE", is_nested.copy(), exp.false()), f"_n{i}"))
        absent.append(
            _alias(
                exp.and_(col("_obj"), exp.Is(this=jt.copy(), expression=exp.null())),
                f"_a{i}",
            )
        )
    parts = [_alias(partition_expr(p), p) for p in partitions]
    t = exp.select(
        *[col(c) for c in LINEAGE],
        *parts,
        col("_line"),
        col("_obj"),
        col("_v"),
        _alias(
            exp.Case(
                ifs=[exp.If(this=exp.EQ(this=col("_und"), expression=lit("{}")), true=exp.null())],
                default=col("_und"),
            ),
            "_undeclared",
        ),
        *text_cols,
        *nested,
        *absent,
    ).from_(exp.Subquery(this=x, alias=exp.TableAlias(this=ident("_x"))))

    casts = [
        _alias(cast_text(col(f"_s{i}"), spec, dialect), name)
        for i, (name, spec) in enumerate(zip(names, specs, strict=True))
    ]
    c = exp.select(
        *[col(cn) for cn in LINEAGE],
        *[col(p) for p in partitions],
        col("_line"),
        col("_obj"),
        col("_v"),
        col("_undeclared"),
        *[col(f"_s{i}") for i in range(len(names))],
        *[col(f"_n{i}") for i in range(len(names))],
        *[col(f"_a{i}") for i in range(len(names))],
        *casts,
    ).from_(exp.Subquery(this=t, alias=exp.TableAlias(this=ident("_t"))))

    mism = [
        exp.or_(
            col(f"_n{i}"),
            exp.and_(
                exp.Not(this=exp.Is(this=col(f"_s{i}"), expression=exp.null())),
                exp.Is(this=col(n), expression=exp.null()),
            ),
        )
        for i, n in enumerate(names)
    ]
    rescued_pairs = exp.JSONObject(
        expressions=[
            exp.JSONKeyValue(
                this=lit(n),
                expression=exp.Case(ifs=[exp.If(this=m.copy(), true=_bracket("_v", i, dialect))]),
            )
            for i, (n, m) in enumerate(zip(names, mism, strict=True))
        ]
    )
    rescued = exp.Anonymous(
        this="json_merge_patch",
        expressions=[exp.func("COALESCE", col("_undeclared"), lit("{}")), rescued_pairs],
    )
    any_mism = exp.or_(*[m.copy() for m in mism]) if mism else exp.false()
    final = exp.select(
        *[col(cn) for cn in LINEAGE],
        *[col(p) for p in partitions],
        *[col(n) for n in names],
        _alias(exp.Not(this=col("_obj")), "_corrupt"),
        _alias(exp.Case(ifs=[exp.If(this=exp.Not(this=col("_obj")), true=col("_line"))]), "_raw"),
        _alias(exp.and_(col("_obj"), exp.paren(any_mism)), "_mismatch"),
        *[_alias(exp.and_(col("_obj"), exp.paren(m.copy())), f"_x{i}") for i, m in enumerate(mism)],
        *[col(f"_a{i}") for i in range(len(names))],
        col("_undeclared"),
        _alias(
            exp.Case(
                ifs=[
                    exp.If(
                        this=exp.or_(
                            exp.Not(this=exp.Is(this=col("_undeclared"), expression=exp.null())),
                            exp.and_(col("_obj"), exp.paren(any_mism.copy())),
                        ),
                        true=rescued,
                    )
                ]
            ),
            "_rescued_data",
        ),
    ).from_(exp.Subquery(this=c, alias=exp.TableAlias(this=ident("_c"))))
    return final
