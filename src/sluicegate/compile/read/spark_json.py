"""Spark's JSON pieces of the readers, from built-ins only (no Python UDFs).

Spark has no ``json_valid``, ``json_type`` or ``json_merge_patch``; this module rebuilds
the text DuckDB writes (``json_extract_string``'s values, ``json_object``'s and
``json_merge_patch``'s objects) from ``from_json``/``to_json``, string functions and
``Double.toString`` (see ndjson_spark.py for the reader's decisions). The
:data:`SPARK` reader dialect the format modules receive is at the end.
"""

from __future__ import annotations

from sqlglot import exp

from ..render import col, lit
from .relation import ReaderDialect, not_null

MAP_VARIANT = "MAP<STRING, VARIANT>"
MAP_STRING = "MAP<STRING, STRING>"
ONE_CLOSING_BRACE = r"^[^}]*\}[ \t\r\n]*\z"
MAYBE_LENIENT = ("nan", "inf")
"""The cheap pre-test for a non-finite spelling: the lower-cased line contains one of these.

It admits every line ``(?i:nan|inf)`` matches (that regex folds ASCII case only), and
costs a fifth as much: an unanchored case-folding regex tries each position of each line
(3.3 CPU s per million lines on ``local[2]``, 0.7 s for this)."""
# ndjson_duckdb's lenient-token test, with Java's $1 for the kept group.
STRINGS_AND_ALLOWED = r'"(?:[^"\\]|\\.)*"|([:,\[][ \t\r\n]*)(?:NaN|-?Infinity)'
LENIENT = r"(?i:nan|inf)"


def _fn(name: str, *args: exp.Expression) -> exp.Anonymous:
    return exp.Anonymous(this=name, expressions=list(args))


def _concat(*parts: exp.Expression) -> exp.Expression:
    return exp.Concat(expressions=list(parts), safe=False, coalesce=False)


def _case(
    cond: exp.Expression, then: exp.Expression, default: exp.Expression | None = None
) -> exp.Case:
    return exp.Case(ifs=[exp.If(this=cond, true=then)], default=default)


def _lambda(body: exp.Expression, name: str) -> exp.Lambda:
    return exp.Lambda(this=body, expressions=[exp.to_identifier(name)])


def _field(var: str, name: str) -> exp.Dot:
    return exp.Dot(this=exp.Column(this=exp.to_identifier(var)), expression=exp.to_identifier(name))


def _int(n: int) -> exp.Literal:
    return exp.Literal.number(n)


def _type(name: str) -> exp.DataType:
    return exp.DataType.build(name)


def json_options() -> exp.Expression:
    """Jackson settings: no single quotes; ``NaN``/``Infinity`` read as numbers."""
    return _fn(
        "MAP",
        lit("allowSingleQuotes"),
        lit("false"),
        lit("allowNonNumericNumbers"),
        lit("true"),
    )


def json_quote(text: exp.Expression) -> exp.Expression:
    """``text`` as a JSON string literal: ``to_json(array(x))`` is ``["x"]``, minus brackets."""
    arr = _fn("TO_JSON", exp.Array(expressions=[text]))
    return exp.Substring(
        this=arr,
        start=_int(2),
        length=exp.Sub(this=exp.Length(this=arr.copy()), expression=_int(2)),
    )


BIG_INTEGER = r"^DECIMAL\((19|2[0-9]|3[0-8]),0\)\z"  # an integer literal beyond BIGINT


def is_fraction(ty: exp.Expression) -> exp.Expression:
    """A number DuckDB reads as a double: any number but an integer literal."""
    return exp.and_(
        exp.or_(
            exp.Like(this=ty.copy(), expression=lit("DECIMAL%")),
            exp.In(this=ty.copy(), expressions=[lit("DOUBLE"), lit("FLOAT")]),
        ),
        exp.Not(this=exp.RegexpLike(this=ty.copy(), expression=lit(BIG_INTEGER))),
    )


def java_double(v: exp.Expression, ty: exp.Expression) -> exp.Expression:
    """Java's ``Double.toString`` of a fractional variant number (NULL for anything else)."""
    as_double = exp.Cast(this=v.copy(), to=_type("DOUBLE"))
    return _case(is_fraction(ty), exp.Cast(this=as_double, to=_type("STRING")))


def java_parts(j: exp.Expression) -> tuple[exp.Expression, exp.Expression]:
    """(mantissa, exponent) of Java's scientific notation ``-1.2345E7``; NULLs when plain."""
    sci = _fn("CONTAINS", j.copy(), lit("E"))
    pieces = exp.Split(this=j.copy(), expression=lit("E"))
    mantissa = _case(sci, exp.Bracket(this=pieces, expressions=[_int(0)], offset=0))
    exponent = _case(
        sci.copy(),
        exp.TryCast(
            this=exp.Bracket(this=pieces.copy(), expressions=[_int(1)], offset=0),
            to=_type("INT"),
        ),
    )
    return mantissa, exponent


def yyjson_double(j: exp.Expression, m: exp.Expression, e: exp.Expression) -> exp.Expression:
    """A double as DuckDB prints it in JSON, from Java's text ``j`` = mantissa ``m`` E ``e``.

    Both print the shortest digits; they differ in notation. yyjson writes plain decimals
    for 1e-6 <= |x| < 1e21 (an integral value gets ``.0``) and ``1.5e300`` outside, where
    Java switches to ``d.dddE±n`` below 1e-3 and from 1e7. So Java's scientific form is
    rewritten from its digits and exponent; its plain form is already yyjson's.
    """
    neg = _fn("STARTSWITH", m.copy(), lit("-"))
    sign = _case(neg, lit("-"), lit(""))
    unsigned = exp.Trim(this=m.copy(), expression=lit("-"), position="LEADING")
    first = exp.Substring(this=unsigned.copy(), start=_int(1), length=_int(1))
    rest = exp.Trim(
        this=exp.Substring(this=unsigned.copy(), start=_int(3)),
        expression=lit("0"),
        position="TRAILING",
    )
    digits = _concat(first, rest)
    n = exp.Length(this=digits.copy())
    e1 = exp.Add(this=e.copy(), expression=_int(1))
    big = _case(
        exp.LTE(this=n.copy(), expression=e1.copy()),
        _concat(
            sign.copy(),
            digits.copy(),
            exp.Repeat(this=lit("0"), times=exp.Sub(this=e1.copy(), expression=n.copy())),
            lit(".0"),
        ),
        _concat(
            sign.copy(),
            exp.Substring(this=digits.copy(), start=_int(1), length=e1.copy()),
            lit("."),
            exp.Substring(this=digits.copy(), start=exp.Add(this=e.copy(), expression=_int(2))),
        ),
    )
    small = _concat(
        sign.copy(),
        lit("0."),
        exp.Repeat(this=lit("0"), times=exp.Sub(this=exp.Neg(this=e.copy()), expression=_int(1))),
        digits.copy(),
    )
    sci = _concat(
        sign.copy(),
        first.copy(),
        _case(exp.GT(this=n.copy(), expression=_int(1)), _concat(lit("."), rest.copy()), lit("")),
        lit("e"),
        exp.Cast(this=e.copy(), to=_type("STRING")),
    )
    return exp.Case(
        ifs=[
            exp.If(this=exp.Is(this=e.copy(), expression=exp.null()), true=j.copy()),
            exp.If(this=exp.Between(this=e.copy(), low=_int(0), high=_int(20)), true=big),
            exp.If(this=exp.Between(this=e.copy(), low=_int(-6), high=_int(-1)), true=small),
        ],
        default=sci,
    )


def number_text(
    ty: exp.Expression, raw: exp.Expression, formatted: exp.Expression
) -> exp.Expression:
    """An integer too long even for DECIMAL(38) is a DOUBLE in a variant, but DuckDB keeps
    its digits: take them from the string-valued parse (``raw``), where Jackson wrote them."""
    is_int = exp.and_(
        exp.EQ(this=ty.copy(), expression=lit("DOUBLE")),
        exp.RegexpLike(this=raw.copy(), expression=lit(r"^-?[0-9]+\z")),
    )
    return _case(is_int, raw, formatted)


def is_nested(ty: exp.Expression) -> exp.Expression:
    """The variant type (``schema_of_variant``) is an object or an array."""
    return exp.or_(
        exp.Like(this=ty.copy(), expression=lit("OBJECT%")),
        exp.Like(this=ty.copy(), expression=lit("ARRAY%")),
    )


def value_text(
    v: exp.Expression, ty: exp.Expression, number: exp.Expression, nested: exp.Expression
) -> exp.Expression:
    """DuckDB's ``json_extract_string`` of variant ``v`` of type ``ty``.

    ``number`` is the yyjson text of a fractional number, ``nested`` the raw JSON of an
    object or array. Integers keep their digits (beyond BIGINT a variant holds
    ``DECIMAL(p,0)`` with p >= 19; a decimal literal such as ``2.0`` gives p <= 18 and is
    a double to DuckDB, like every other non-integer).
    """
    return exp.Case(
        ifs=[
            exp.If(this=exp.EQ(this=ty.copy(), expression=lit("VOID")), true=exp.null()),
            exp.If(this=is_fraction(ty), true=number),
            exp.If(this=is_nested(ty), true=nested),
        ],
        default=exp.Cast(this=v.copy(), to=_type("STRING")),
    )


def json_value(
    v: exp.Expression, ty: exp.Expression, number: exp.Expression, nested: exp.Expression
) -> exp.Expression:
    """The JSON text of variant ``v`` as DuckDB's ``json_extract`` writes it (strings quoted)."""
    return exp.Case(
        ifs=[
            exp.If(this=exp.EQ(this=ty.copy(), expression=lit("VOID")), true=lit("null")),
            exp.If(
                this=exp.EQ(this=ty.copy(), expression=lit("STRING")),
                true=_fn("TO_JSON", v.copy()),
            ),
        ],
        default=value_text(v, ty, number, nested),
    )


RAW_JSON = "SG_RAW_JSON"
"""Marks a rescue value that already is JSON text (never rendered: unwrapped below)."""


def json_of(value: exp.Expression) -> exp.Expression:
    """A typed value as DuckDB's ``json_object`` writes it (CSV text, Parquet values).

    Dispatches on ``typeof`` (constant per column, folded by Spark): text and times as
    JSON strings, integers and decimals as written, doubles in yyjson's notation,
    anything else through ``to_json``.
    """
    if isinstance(value, exp.Anonymous) and value.name.upper() == RAW_JSON:
        return value.expressions[0].copy()
    ty = _fn("TYPEOF", value.copy())
    java = exp.Cast(this=value.copy(), to=_type("STRING"))
    mantissa, exponent = java_parts(java)
    plain = exp.or_(
        exp.In(
            this=ty.copy(),
            expressions=[lit(t) for t in ("boolean", "tinyint", "smallint", "int", "bigint")],
        ),
        exp.Like(this=ty.copy(), expression=lit("decimal%")),
    )
    wrapped = _fn(
        "TO_JSON",
        exp.Struct(
            expressions=[exp.PropertyEQ(this=exp.to_identifier("v"), expression=value.copy())]
        ),
    )
    return exp.Case(
        ifs=[
            exp.If(this=exp.Is(this=value.copy(), expression=exp.null()), true=lit("null")),
            exp.If(
                this=exp.EQ(this=ty.copy(), expression=lit("string")), true=json_quote(value.copy())
            ),
            exp.If(this=plain, true=java.copy()),
            exp.If(
                this=exp.In(this=ty.copy(), expressions=[lit("double"), lit("float")]),
                true=yyjson_double(java.copy(), mantissa, exponent),
            ),
            exp.If(
                this=exp.or_(
                    exp.EQ(this=ty.copy(), expression=lit("date")),
                    exp.Like(this=ty.copy(), expression=lit("timestamp%")),
                ),
                true=json_quote(java.copy()),
            ),
        ],
        default=exp.Substring(
            this=wrapped,
            start=_int(6),
            length=exp.Sub(this=exp.Length(this=wrapped.copy()), expression=_int(6)),
        ),
    )


def json_object_text(pairs: list[tuple[str, exp.Expression]]) -> exp.Expression:
    """``{name: value, …}`` of the non-NULL values, as DuckDB's ``json_merge_patch('{}',
    json_object(…))`` writes it (Parquet's undeclared columns)."""
    pieces = exp.ArrayFilter(
        this=exp.Array(
            expressions=[
                _case(
                    not_null(value.copy()), _concat(json_quote(lit(name)), lit(":"), json_of(value))
                )
                for name, value in pairs
            ]
        ),
        expression=_lambda(not_null(exp.Column(this=exp.to_identifier("p"))), "p"),
    )
    return _concat(lit("{"), exp.ArrayToString(this=pieces, expression=lit(",")), lit("}"))


def rescued_json(fields: list[tuple[str, exp.Expression, exp.Expression]]) -> exp.Expression:
    """``_undeclared`` merged with ``{name: value}`` of every flagged field (DuckDB's merge
    patch: the object's keys first, then the flagged fields in declared order)."""
    pieces = exp.ArrayFilter(
        this=exp.Array(
            expressions=[
                _case(flag.copy(), _concat(json_quote(lit(name)), lit(":"), json_of(value)))
                for name, flag, value in fields
            ]
        ),
        expression=_lambda(not_null(exp.Column(this=exp.to_identifier("p"))), "p"),
    )
    patch = exp.ArrayToString(this=pieces, expression=lit(","))
    und = col("_undeclared")
    return exp.Case(
        ifs=[
            exp.If(
                this=exp.Is(this=und.copy(), expression=exp.null()),
                true=_concat(lit("{"), patch.copy(), lit("}")),
            ),
            exp.If(
                this=exp.EQ(this=exp.func("SIZE", pieces.copy()), expression=_int(0)),
                true=und.copy(),
            ),
        ],
        default=_concat(
            exp.Substring(
                this=und.copy(),
                start=_int(1),
                length=exp.Sub(this=exp.Length(this=und.copy()), expression=_int(1)),
            ),
            lit(","),
            patch.copy(),
            lit("}"),
        ),
    )


SPARK = ReaderDialect("spark", rescued_json, json_object_text)
