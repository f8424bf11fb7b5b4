"""NDJSON lines → the typed relation, on Spark SQL (the text relation ``ndjson_duckdb`` builds).

:func:`typed_select` hands the text relation to the shared ``relation.finish`` (casts,
flags, ``_raw``), so only
the JSON part is engine-specific, and the cross-engine conformance suite
(tests/engines/conformance) holds it to DuckDB's result line for line. The decisions are
``ndjson_duckdb``'s (docs/contract-reference.md § "JSON edge cases"); here is how Spark,
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

from ...contract.models import TableSource
from ..render import col, lit
from . import ndjson_spark_plain as plain
from . import relation
from .relation import LINEAGE, alias, not_null, partition_expr, sub
from .spark_json import (
    LENIENT,
    MAP_STRING,
    MAP_VARIANT,
    MAYBE_LENIENT,
    ONE_CLOSING_BRACE,
    RAW_JSON,
    SPARK,
    STRINGS_AND_ALLOWED,
    _case,
    _concat,
    _field,
    _fn,
    _int,
    _lambda,
    is_nested,
    java_double,
    java_parts,
    json_options,
    json_quote,
    json_value,
    number_text,
    value_text,
    yyjson_double,
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
    ``+Infinity``, ``INF`` …; DuckDB's reader rejects them: so must this one).

    The exact test (strings and the allowed spellings removed, then the regex) runs only
    on lines whose lower-cased text contains ``nan`` or ``inf`` — a substring search, where
    the same regex on every line cost more than the rest of the check."""
    stripped = exp.RegexpReplace(
        this=line.copy(), expression=lit(STRINGS_AND_ALLOWED), replacement=lit("$1")
    )
    lowered = exp.Lower(this=line.copy())
    maybe = exp.or_(*[_fn("CONTAINS", lowered.copy(), lit(word)) for word in MAYBE_LENIENT])
    return _case(
        maybe,
        exp.RegexpLike(this=stripped, expression=lit(LENIENT)),
        exp.false(),
    )


def text_select(
    lines_table: str,
    source: TableSource,
    partitions: list[str],
    where: exp.Expression | None = None,
) -> exp.Select:
    """The text relation (see read.py) of NDJSON lines (those ``where`` holds), Spark dialect.

    Besides read.py's columns it carries, for :func:`rescue_value`, each declared
    column's variant ``_e<i>`` and type ``_ty<i>``, and ``_sm`` (the string-valued parse,
    only on lines with a nested value or an undeclared key).
    """
    parsed = sub(parse_select(lines_table, source, partitions, where), "_x")
    return format_select(parsed, source, partitions)


def parse_select(
    lines_table: str,
    source: TableSource,
    partitions: list[str],
    where: exp.Expression | None = None,
) -> exp.Select:
    """Step one of the text relation: each line parsed once and checked (``_ok``, ``_m``),
    each declared column's variant ``_e<i>``, its type ``_ty<i>`` and absence ``_a<i>``,
    and ``_extra`` (the object has an undeclared key)."""
    names = list(source.columns)
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
    if where is not None:
        j = j.where(where)
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
    return exp.select(
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


def format_select(parsed: exp.Expression, source: TableSource, partitions: list[str]) -> exp.Select:
    """Step two of the text relation: the values as DuckDB's text (``_s<i>``, ``_n<i>``,
    ``_undeclared``) from :func:`parse_select`'s rows (``parsed``: a table or subquery)."""
    names = list(source.columns)
    n = len(names)
    line = col("_line")
    m = col("_m")
    carried = [*LINEAGE, *partitions, "_line"]
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
    ).from_(parsed)
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


def rescue_value(i: int, name: str) -> exp.Expression:
    """The original JSON value of column ``name`` (DuckDB's ``json_extract``), for rescue."""
    text = json_value(
        col(f"_e{i}"),
        col(f"_ty{i}"),
        col(f"_num{i}"),
        _fn("TRY_ELEMENT_AT", col("_sm"), lit(name)),
    )
    return _fn(RAW_JSON, text)


def typed_select(
    lines_table: str,
    source: TableSource,
    partitions: list[str],
    physical: dict[str, str] | None = None,
) -> exp.Query:
    """The typed relation of NDJSON lines on Spark (the same columns as on DuckDB).

    Plain lines (``ndjson_spark_plain``: most of a feed) are parsed once into strings;
    the rest take this module's general path; the two are one UNION ALL, and
    ``ndjson_spark_plain.is_plain`` is never NULL, so each line is on exactly one side."""
    extra = _carried_for_rescue(len(source.columns))
    if not plain.applies(source):
        return relation.finish(
            text_select(lines_table, source, partitions),
            source,
            partitions,
            SPARK,
            rescue_value,
            extra=extra,
        )
    is_plain = plain.is_plain(col("_line"), col("_bad_utf8"), source)
    general = relation.finish(
        text_select(lines_table, source, partitions, exp.Not(this=is_plain)),
        source,
        partitions,
        SPARK,
        rescue_value,
        extra=extra,
    )
    fast = relation.finish(
        plain.text_select(lines_table, source, partitions, is_plain.copy()),
        source,
        partitions,
        SPARK,
        plain.rescue_value,
    )
    return exp.union(fast, general, distinct=False)
