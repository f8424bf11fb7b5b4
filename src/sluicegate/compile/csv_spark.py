"""CSV lines → the text relation, on Spark SQL (the relation ``csv.py`` builds on DuckDB).

The decisions are ``csv.py``'s (docs/contract-reference.md §6) and so are the regular
expressions (``field_re``, ``line_re``: the common subset of RE2 and java.util.regex);
only the list functions differ, each replaced by its Spark built-in:

==========================  =================================================
DuckDB                      Spark
==========================  =================================================
``string_split(s, sep)``    ``split(s, regex)`` (the separator escaped)
``list_transform``/filter   ``transform`` / ``filter``
``list_position`` (NULL     ``array_position`` (0 when missing: turned to NULL)
when missing)
``regexp_replace(…, '\\1',  ``regexp_replace(…, '$1')`` (always global)
'g')``
``to_json(MAP(k, v))``      ``to_json(map_from_arrays(k, v))``
==========================  =================================================

``csv.typed_from_csv_lines`` dispatches here for ``dialect="spark"``.
"""

from __future__ import annotations

from sqlglot import exp

from ..contract.models import CsvOptions, TableSource
from .csv import NL, _re_char, field_re, line_re
from .read import LINEAGE, alias, finish, not_null, sub, with_partitions
from .render import col, ident, lit


def _fn(name: str, *args: exp.Expression) -> exp.Anonymous:
    return exp.Anonymous(this=name, expressions=list(args))


def _lambda(var: str, body: exp.Expression) -> exp.Lambda:
    return exp.Lambda(this=body, expressions=[exp.to_identifier(var)])


def _var(name: str) -> exp.Column:
    return exp.Column(this=exp.to_identifier(name))


def _size(e: exp.Expression) -> exp.Expression:
    return _fn("SIZE", e)


def _position(arr: exp.Expression, value: exp.Expression) -> exp.Expression:
    """1-based position, NULL when missing (Spark's ``array_position`` says 0); an INT, as
    ``element_at`` wants."""
    found = exp.Nullif(this=_fn("ARRAY_POSITION", arr, value), expression=exp.Literal.number(0))
    return exp.Cast(this=found, to=exp.DataType.build("INT"))


def _at(arr: exp.Expression, i: exp.Expression) -> exp.Expression:
    """Element ``i`` (1-based); NULL for a NULL index (``try_element_at``: never raises)."""
    return _fn("TRY_ELEMENT_AT", arr, i)


def fields_expr(text: exp.Expression, opts: CsvOptions) -> exp.Expression:
    """The unquoted field values of a well-formed line, as an array."""
    if opts.quote:
        # as in csv.py: append a delimiter, mark the end of every field with a newline
        marked = exp.RegexpReplace(
            this=exp.Concat(expressions=[text.copy(), lit(opts.delimiter)]),
            expression=lit(f"({field_re(opts)}){_re_char(opts.delimiter)}"),
            replacement=lit("$1" + NL),
        )
        without_last_nl = exp.Substring(
            this=marked,
            start=exp.Literal.number(1),
            length=exp.Sub(this=exp.Length(this=marked.copy()), expression=exp.Literal.number(1)),
        )
        raw = exp.Split(this=without_last_nl, expression=lit(NL), limit=exp.Literal.number(-1))
    else:
        raw = exp.Split(
            this=text.copy(),
            expression=lit(_re_char(opts.delimiter)),
            limit=exp.Literal.number(-1),
        )
    x = _var("x")
    q = opts.quote
    ifs = []
    if q:
        quoted = exp.and_(
            exp.GTE(this=exp.Length(this=x.copy()), expression=exp.Literal.number(2)),
            _fn("STARTSWITH", x.copy(), lit(q)),
        )
        inner = exp.Substring(
            this=x.copy(),
            start=exp.Literal.number(2),
            length=exp.Sub(this=exp.Length(this=x.copy()), expression=exp.Literal.number(2)),
        )
        ifs.append(exp.If(this=quoted, true=_fn("REPLACE", inner, lit(q + q), lit(q))))
    ifs.append(exp.If(this=exp.EQ(this=x.copy(), expression=lit("")), true=exp.null()))
    unquote = exp.Case(ifs=ifs, default=x.copy())
    return exp.Transform(this=raw, expression=_lambda("x", unquote))


def _well_formed(opts: CsvOptions) -> exp.Expression:
    return exp.and_(
        exp.Not(this=col("_bad_utf8")),
        exp.RegexpLike(this=col("_line"), expression=lit(line_re(opts))),
    )


def header_select(lines_table: str, source: TableSource, opts: CsvOptions) -> exp.Select:
    """One row per file: the header's names, positions of declared columns, undeclared ones."""
    names = list(source.columns)
    declared = exp.Array(expressions=[lit(n) for n in names])
    first = (
        exp.select(col("_source_file"), alias(exp.func("MIN", col("_source_line")), "_hl"))
        .from_(exp.to_table(lines_table))
        .group_by(col("_source_file"))
    )
    head_names = exp.Case(
        ifs=[
            exp.If(
                this=_well_formed(opts),
                true=exp.Transform(
                    this=fields_expr(col("_line"), opts),
                    expression=_lambda(
                        "x", exp.Trim(this=exp.func("COALESCE", _var("x"), lit("")))
                    ),
                ),
            )
        ]
    )
    h = (
        exp.select(col("_source_file", "_l"), col("_hl", "_f"), alias(head_names, "_hn"))
        .from_(exp.Table(this=ident(lines_table), alias=exp.TableAlias(this=ident("_l"))))
        .join(
            sub(first, "_f"),
            on=exp.and_(
                exp.EQ(this=col("_source_file", "_l"), expression=col("_source_file", "_f")),
                exp.EQ(this=col("_source_line", "_l"), expression=col("_hl", "_f")),
            ),
        )
    )
    undeclared = exp.ArrayFilter(
        this=col("_hn"),
        expression=_lambda(
            "x", exp.Not(this=exp.ArrayContains(this=declared, expression=_var("x")))
        ),
    )
    hok = exp.and_(
        not_null(col("_hn")),
        exp.EQ(this=_size(_fn("ARRAY_DISTINCT", col("_hn"))), expression=_size(col("_hn"))),
    )
    return exp.select(
        col("_source_file"),
        col("_hl"),
        alias(exp.func("COALESCE", hok, exp.false()), "_hok"),
        alias(_size(col("_hn")), "_hcount"),
        *[alias(_position(col("_hn"), lit(n)), f"_hp{i}") for i, n in enumerate(names)],
        alias(undeclared, "_hu"),
        alias(
            exp.Transform(
                this=undeclared.copy(),
                expression=_lambda("x", _position(col("_hn"), _var("x"))),
            ),
            "_hi",
        ),
    ).from_(sub(h, "_h"))


def text_select(
    lines_table: str, source: TableSource, partitions: list[str], opts: CsvOptions
) -> exp.Select:
    """The text relation of CSV lines, Spark dialect."""
    names = list(source.columns)
    n = len(names)
    parts = [col(p, "_l") for p in partitions]
    lines = with_partitions(lines_table, partitions, ["_line", "_bad_utf8"], "_l", dialect="spark")
    if opts.header:
        head = header_select(lines_table, source, opts)
        base = (
            exp.select(
                *[col(c, "_l") for c in LINEAGE],
                *parts,
                col("_line", "_l"),
                col("_bad_utf8", "_l"),
                col("_hok", "_h"),
                col("_hcount", "_h"),
                *[col(f"_hp{i}", "_h") for i in range(n)],
                col("_hu", "_h"),
                col("_hi", "_h"),
            )
            .from_(lines)
            .join(
                sub(head, "_h"),
                on=exp.EQ(this=col("_source_file", "_l"), expression=col("_source_file", "_h")),
            )
            .where(exp.NEQ(this=col("_source_line", "_l"), expression=col("_hl", "_h")))
        )
    else:
        base = exp.select(
            *[col(c, "_l") for c in LINEAGE],
            *parts,
            col("_line", "_l"),
            col("_bad_utf8", "_l"),
            alias(exp.true(), "_hok"),
            alias(exp.Literal.number(n), "_hcount"),
            *[alias(exp.Literal.number(i + 1), f"_hp{i}") for i in range(n)],
            alias(exp.cast(exp.Array(expressions=[]), "ARRAY<STRING>"), "_hu"),
            alias(exp.cast(exp.Array(expressions=[]), "ARRAY<INT>"), "_hi"),
        ).from_(lines)
    carried = [*LINEAGE, *partitions, "_line"]
    f = exp.select(
        *[col(c) for c in carried],
        col("_hok"),
        col("_hcount"),
        *[col(f"_hp{i}") for i in range(n)],
        col("_hu"),
        col("_hi"),
        alias(
            exp.Case(ifs=[exp.If(this=_well_formed(opts), true=fields_expr(col("_line"), opts))]),
            "_f",
        ),
    ).from_(sub(base, "_b"))
    ok = exp.func(
        "COALESCE",
        exp.and_(col("_hok"), exp.EQ(this=_size(col("_f")), expression=col("_hcount"))),
        exp.false(),
    )
    o = exp.select(
        *[col(c) for c in carried],
        alias(ok, "_ok"),
        col("_f"),
        *[col(f"_hp{i}") for i in range(n)],
        col("_hu"),
        col("_hi"),
    ).from_(sub(f, "_fs"))

    values = exp.Transform(this=col("_hi"), expression=_lambda("i", _at(col("_f"), _var("i"))))
    undeclared = exp.Case(
        ifs=[
            exp.If(
                this=exp.and_(
                    col("_ok"), exp.GT(this=_size(col("_hu")), expression=exp.Literal.number(0))
                ),
                true=_fn("TO_JSON", _fn("MAP_FROM_ARRAYS", col("_hu"), values)),
            )
        ]
    )
    return exp.select(
        *[col(c) for c in carried],
        col("_ok"),
        *[
            alias(
                exp.Case(ifs=[exp.If(this=col("_ok"), true=_at(col("_f"), col(f"_hp{i}")))]),
                f"_s{i}",
            )
            for i in range(n)
        ],
        *[alias(exp.false(), f"_n{i}") for i in range(n)],
        *[
            alias(
                exp.and_(col("_ok"), exp.Is(this=col(f"_hp{i}"), expression=exp.null())), f"_a{i}"
            )
            for i in range(n)
        ],
        alias(undeclared, "_undeclared"),
    ).from_(sub(o, "_o"))


def typed_from_csv_lines_spark(
    lines_table: str, source: TableSource, partitions: list[str]
) -> exp.Select:
    """The typed relation (read.py) of CSV lines on Spark."""
    opts = source.csv or CsvOptions()
    return finish(
        text_select(lines_table, source, partitions, opts),
        source,
        partitions,
        "spark",
        lambda i, _name: col(f"_s{i}"),  # text: rescued as a JSON string (read_spark.json_of)
    )
