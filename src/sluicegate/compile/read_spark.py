"""NDJSON lines → the text relation, on Spark SQL (the same relation ``json_duckdb`` builds).

``read.typed_select`` dispatches here for ``dialect="spark"``; :func:`typed_select_spark`
hands the text relation to the shared ``read.finish`` (casts, flags, ``_raw``), so only
the JSON part is engine-specific, and the cross-engine conformance suite
(tests/engines/conformance) holds it to DuckDB's result line for line. The decisions are
``json_duckdb``'s (docs/contract-reference.md § "JSON edge cases"); here is how Spark,
which has no ``json_valid``, ``json_type`` or ``json_merge_patch``, reaches them with
built-ins only (no Python UDFs):

* **parse once**: ``from_json(line, 'MAP<STRING, VARIANT>')`` with single quotes off.
  It keeps the object's key order; an array, a scalar or malformed text gives NULL.
  Jackson already rejects trailing commas, comments and leading zeros; the non-finite
  spellings other than ``NaN``/``Infinity``/``-Infinity`` are rejected by the same regex
  test as on DuckDB; a repeated top-level key (``map_keys`` has duplicates) makes the
  record corrupt.
* **nothing after the object**: Jackson stops at the end of the first value, so
  ``{"a":1} x`` and ``{"a":1}{"a":2}`` would pass. A line whose only ``}`` is its last
  non-blank character cannot have trailing text (the cheap test, one regex); otherwise it
  is parsed wrapped twice — ``[line]`` must hold exactly one value and ``{"k":line}`` must
  parse — which no trailing text survives (after the object, the first wrapper needs
  ``,`` or ``]`` and the second ``,`` or ``}``).
* **values as DuckDB's** ``json_extract_string``: strings unquoted; integers as written;
  every other number as the shortest double in yyjson's notation (``1.5``, ``1000.0``,
  ``1e-7``), rebuilt from Java's ``Double.toString`` by :func:`yyjson_double`; objects and
  arrays as compact JSON text in their original key order (a second, string-valued
  parse, run only on lines that have one).
* **undeclared fields** and **rescued values** as DuckDB's ``json_merge_patch`` and
  ``json_extract`` write them: the undeclared keys in their order, then the mismatched
  declared columns in declared order, each with its original JSON value.

Known differences (strict xfails in the conformance suite): numbers inside nested values
keep Java's notation (``1.0E-7``); more than 17 significant digits, ``-0.0`` and numbers
that overflow a double print differently.
"""

from __future__ import annotations

from sqlglot import exp

from ..contract.models import TableSource
from .read import LINEAGE, alias, finish, not_null, partition_expr, sub
from .render import col, lit

MAP_VARIANT = "MAP<STRING, VARIANT>"
MAP_STRING = "MAP<STRING, STRING>"
ONE_CLOSING_BRACE = r"^[^}]*\}[ \t\r\n]*\z"
# json_duckdb's lenient-token test, with Java's $1 for the kept group.
MAYBE_LENIENT = r"(?i:nan|inf)"
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


def _one_object(line: exp.Expression) -> exp.Expression:
    """Nothing follows the object (see the module docstring: a cheap regex, else two wraps)."""
    one_value = exp.EQ(
        this=exp.func(
            "SIZE",
            _fn(
                "FROM_JSON",
                _concat(lit("["), line.copy(), lit("]")),
                lit("ARRAY<VARIANT>"),
                json_options(),
            ),
        ),
        expression=_int(1),
    )
    wrapped = not_null(
        _fn(
            "FROM_JSON",
            _concat(lit('{"k":'), line.copy(), lit("}")),
            lit(MAP_VARIANT),
            json_options(),
        )
    )
    return _case(
        exp.RegexpLike(this=line.copy(), expression=lit(ONE_CLOSING_BRACE)),
        exp.true(),
        exp.and_(exp.func("COALESCE", one_value, exp.false()), wrapped),
    )


def _lenient_only(line: exp.Expression) -> exp.Expression:
    """A non-finite spelling other than ``NaN``/``Infinity``/``-Infinity`` (Jackson takes
    ``+Infinity``, ``INF`` …; DuckDB's reader rejects them: so must this one)."""
    stripped = exp.RegexpReplace(
        this=line.copy(), expression=lit(STRINGS_AND_ALLOWED), replacement=lit("$1")
    )
    return _case(
        exp.RegexpLike(this=line.copy(), expression=lit(MAYBE_LENIENT)),
        exp.RegexpLike(this=stripped, expression=lit(LENIENT)),
        exp.false(),
    )


def text_select(lines_table: str, source: TableSource, partitions: list[str]) -> exp.Select:
    """The text relation (see read.py) of NDJSON lines, Spark dialect.

    Besides read.py's columns it carries, for :func:`rescue_value`, each declared
    column's variant ``_e<i>`` and type ``_ty<i>``, and ``_sm`` (the string-valued parse,
    only on lines with a nested value or an undeclared key).
    """
    names = list(source.columns)
    n = len(names)
    line = col("_line")
    m = col("_m")

    parsed = _case(
        col("_bad_utf8"),
        exp.null(),
        _fn("FROM_JSON", line.copy(), lit(MAP_VARIANT), json_options()),
    )
    parts = [alias(partition_expr(p), p) for p in partitions]
    carried = [*LINEAGE, *partitions, "_line"]
    j = exp.select(*[col(c) for c in LINEAGE], *parts, line.copy(), alias(parsed, "_m0")).from_(
        exp.to_table(lines_table)
    )
    keys = _fn("MAP_KEYS", col("_m0"))
    distinct = exp.EQ(
        this=exp.func("SIZE", keys), expression=exp.func("SIZE", _fn("ARRAY_DISTINCT", keys.copy()))
    )
    ok = exp.and_(
        not_null(col("_m0")),
        distinct,
        exp.paren(_one_object(line)),
        exp.Not(this=_lenient_only(line)),
    )
    o = exp.select(*[col(c) for c in carried], alias(_case(ok, col("_m0")), "_m")).from_(
        sub(j, "_j")
    )

    per_col: list[exp.Expression] = []
    present: exp.Expression = _int(0)
    for i, nm in enumerate(names):
        e = _fn("TRY_ELEMENT_AT", m.copy(), lit(nm))
        has = _fn("MAP_CONTAINS_KEY", m.copy(), lit(nm))
        per_col += [
            alias(e, f"_e{i}"),
            alias(_fn("SCHEMA_OF_VARIANT", e.copy()), f"_ty{i}"),
            alias(exp.and_(not_null(m.copy()), exp.Not(this=has)), f"_a{i}"),
        ]
        present = exp.Add(this=present, expression=_case(has.copy(), _int(1), _int(0)))
    x = exp.select(
        *[col(c) for c in carried],
        alias(not_null(m.copy()), "_ok"),
        m.copy(),
        *per_col,
        alias(
            exp.func(
                "COALESCE",
                exp.GT(this=exp.func("SIZE", m.copy()), expression=present),
                exp.false(),
            ),
            "_extra",
        ),
    ).from_(sub(o, "_o"))

    nested = [exp.func("COALESCE", is_nested(col(f"_ty{i}")), exp.false()) for i in range(n)]
    doubles = [exp.EQ(this=col(f"_ty{i}"), expression=lit("DOUBLE")) for i in range(n)]
    need_raw = exp.or_(col("_extra"), *nested, *doubles)
    declared = exp.Array(expressions=[lit(nm) for nm in names])
    undeclared_entries = exp.ArrayFilter(
        this=_fn("MAP_ENTRIES", m.copy()),
        expression=_lambda(
            exp.Not(this=exp.ArrayContains(this=declared, expression=_field("e", "key"))), "e"
        ),
    )
    raw_map = _fn("FROM_JSON", line.copy(), lit(MAP_STRING), json_options())
    y = exp.select(
        exp.Star(),
        *[alias(nd, f"_nested{i}") for i, nd in enumerate(nested)],
        *[alias(java_double(col(f"_e{i}"), col(f"_ty{i}")), f"_jd{i}") for i in range(n)],
        alias(_case(need_raw, raw_map), "_sm"),
        alias(_case(col("_extra"), _struct_each(undeclared_entries, "e", _typed_entry)), "_ue0"),
    ).from_(sub(x, "_x"))
    parts_of = [java_parts(col(f"_jd{i}")) for i in range(n)]
    w = exp.select(
        exp.Star(),
        *[alias(mt, f"_jm{i}") for i, (mt, _e) in enumerate(parts_of)],
        *[alias(ex, f"_je{i}") for i, (_m, ex) in enumerate(parts_of)],
        alias(_struct_each(col("_ue0"), "u", _java_entry), "_ue1"),
    ).from_(sub(y, "_y"))
    v = exp.select(
        exp.Star(),
        *[
            alias(
                number_text(
                    col(f"_ty{i}"),
                    _fn("TRY_ELEMENT_AT", col("_sm"), lit(names[i])),
                    yyjson_double(col(f"_jd{i}"), col(f"_jm{i}"), col(f"_je{i}")),
                ),
                f"_num{i}",
            )
            for i in range(n)
        ],
        alias(_struct_each(col("_ue1"), "u", _parts_entry), "_ue"),
    ).from_(sub(w, "_w"))

    def f(name: str) -> exp.Dot:
        return _field("u", name)

    undeclared_parts = exp.Transform(
        this=col("_ue"),
        expression=_lambda(
            _concat(
                json_quote(f("k")),
                lit(":"),
                json_value(
                    f("v"),
                    f("ty"),
                    number_text(
                        f("ty"),
                        _fn("TRY_ELEMENT_AT", col("_sm"), f("k")),
                        yyjson_double(f("jd"), f("jm"), f("je")),
                    ),
                    _fn("TRY_ELEMENT_AT", col("_sm"), f("k")),
                ),
            ),
            "u",
        ),
    )
    undeclared = _case(
        exp.GT(this=exp.func("SIZE", col("_ue")), expression=_int(0)),
        _concat(lit("{"), exp.ArrayToString(this=undeclared_parts, expression=lit(",")), lit("}")),
    )
    texts = [
        alias(
            _case(
                exp.and_(col("_ok"), exp.Not(this=col(f"_nested{i}"))),
                value_text(col(f"_e{i}"), col(f"_ty{i}"), col(f"_num{i}"), exp.null()),
            ),
            f"_s{i}",
        )
        for i in range(n)
    ]
    return exp.select(
        *[col(c) for c in carried],
        col("_ok"),
        *texts,
        *[alias(exp.and_(col("_ok"), col(f"_nested{i}")), f"_n{i}") for i in range(n)],
        *[col(f"_a{i}") for i in range(n)],
        alias(undeclared, "_undeclared"),
        *[col(c) for c in _carried_for_rescue(n)],
    ).from_(sub(v, "_v"))


def _struct(values: dict[str, exp.Expression]) -> exp.Struct:
    return exp.Struct(
        expressions=[
            exp.PropertyEQ(this=exp.to_identifier(k), expression=v) for k, v in values.items()
        ]
    )


def _struct_each(arr: exp.Expression, var: str, make) -> exp.Expression:  # noqa: ANN001
    """``transform(arr, var -> STRUCT(...))``: one small step of the undeclared formatting.

    The steps are separate so no lambda repeats a sub-expression (Spark cannot alias inside
    a lambda; a repeated cast would multiply the generated code past Java's 64 KB limit).
    """
    return exp.Transform(this=arr, expression=_lambda(_struct(make(var)), var))


def _typed_entry(var: str) -> dict[str, exp.Expression]:
    value = _field(var, "value")
    return {
        "k": _field(var, "key"),
        "v": value,
        "ty": _fn("SCHEMA_OF_VARIANT", value.copy()),
    }


def _java_entry(var: str) -> dict[str, exp.Expression]:
    keep = {k: _field(var, k) for k in ("k", "v", "ty")}
    return {**keep, "jd": java_double(_field(var, "v"), _field(var, "ty"))}


def _parts_entry(var: str) -> dict[str, exp.Expression]:
    keep = {k: _field(var, k) for k in ("k", "v", "ty", "jd")}
    mantissa, exponent = java_parts(_field(var, "jd"))
    return {**keep, "jm": mantissa, "je": exponent}


def _carried_for_rescue(n: int) -> list[str]:
    return [
        *[f"_e{i}" for i in range(n)],
        *[f"_ty{i}" for i in range(n)],
        *[f"_num{i}" for i in range(n)],
        "_sm",
    ]


RAW_JSON = "SG_RAW_JSON"
"""Marks a rescue value that already is JSON text (never rendered: unwrapped below)."""


def rescue_value(i: int, name: str) -> exp.Expression:
    """The original JSON value of column ``name`` (DuckDB's ``json_extract``), for rescue."""
    text = json_value(
        col(f"_e{i}"),
        col(f"_ty{i}"),
        col(f"_num{i}"),
        _fn("TRY_ELEMENT_AT", col("_sm"), lit(name)),
    )
    return _fn(RAW_JSON, text)


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


def typed_select_spark(lines_table: str, source: TableSource, partitions: list[str]) -> exp.Select:
    """The typed relation of NDJSON lines on Spark (read.typed_select's columns)."""
    extra = _carried_for_rescue(len(source.columns))
    return finish(
        text_select(lines_table, source, partitions),
        source,
        partitions,
        "spark",
        rescue_value,
        extra=extra,
    )
