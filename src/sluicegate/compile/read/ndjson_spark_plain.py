"""The common NDJSON line on Spark, parsed once: the fast path beside ``ndjson_spark``.

``ndjson_spark`` reaches DuckDB's answer for *any* line — a variant map, per column a
look-up, a type and key tests, DuckDB's text of each value, a string-valued second parse
for nested values and undeclared keys. Most lines of a feed need none of that: a flat
object whose keys are all declared, each once, with unescaped strings, integers and
plain decimals. Such a *plain line* is parsed once with ``FROM_JSON(line, STRUCT<… STRING>)``
and goes straight to ``relation.finish``; every other line takes the general path, and
``ndjson_spark.typed_select`` unions the two (each line matches exactly one side).

Why the answers are the same as the general path's (held line for line by the
conformance suite in tests/engines/conformance):

* **the line test** is one anchored regex (:func:`plain_line`): an object of members
  ``"key":value`` whose keys are declared names (no space before the colon), values an
  unescaped string without control characters, ``true``, ``false``, ``null``, an
  integer of at most 18 digits other than ``-0``, or a decimal with a point, no
  exponent, at most 15 significant digits and a magnitude from 10⁻³ to below 10⁷. Java's
  ``Double.toString``, which the STRING parse writes for a decimal, gives yyjson's text in
  exactly that range (``12.30`` → ``12.3``, ``5.00`` → ``5.0``; 268,305 random such
  decimals checked against the shortest repr); outside it Java switches to ``1.0E-4``
  notation and DuckDB does not, so those lines take the general path.
* **a repeated key** makes the record corrupt, as DuckDB does (a STRUCT parse would keep
  the last value silently): no string in a plain line can hold a quote, so each ``":``
  ends a key and each ``"name":`` is that key; more ``":`` than declared names present
  means a repeat. The test is a column of this branch, not part of the line test: one
  ``CONTAINS`` per declared name in a filter cost Spark more than the regex itself.
* **absence** is ``"name":`` not in the line; **nested** values and **undeclared** keys
  cannot occur; there is no trailing text (the regex is anchored) and no non-finite
  number (not in the grammar).

A rescued value (a declared column whose text did not cast) is its JSON text as DuckDB's
``json_extract`` writes it: the string quoted again, a number or literal as its text.
"""

from __future__ import annotations

import re

from sqlglot import exp

from ...contract.models import TableSource
from ..render import col, ident, lit
from .relation import LINEAGE, alias, partition_expr, sub
from .spark_json import RAW_JSON, _case, _fn, _int, json_options, json_quote

#: Declared names the fast path can put in its regex and STRUCT type as they are.
PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")

_WS = r"[ \t]*+"
_STRING = r'"[^"\\\p{Cntrl}]*+"'
_INTEGER = r"(?:0|-?[1-9][0-9]{0,17}+)"
_DECIMAL = (
    r"-?(?:[1-9][0-9]{0,6}+\.[0-9]{1,8}+"
    r"|0\.(?:[1-9][0-9]{0,12}+|0[1-9][0-9]{0,11}+|00[1-9][0-9]{0,10}+))"
)
_VALUE = f"(?:{_STRING}|{_DECIMAL}|{_INTEGER}|true|false|null)"


def plain_line(names: list[str]) -> str:
    """The regex of a plain line whose keys are all among ``names``: a flat object of
    plain members, nothing before or after it but spaces and tabs."""
    member = '"(?:' + "|".join(names) + f')":{_WS}{_VALUE}'
    return f"^{_WS}\\{{{_WS}(?:{member}(?:{_WS},{_WS}{member})*+)?{_WS}\\}}{_WS}\\z"


def applies(source: TableSource) -> bool:
    """The declared names allow the fast path: identifiers (they go into the regex and the
    STRUCT type as they are), distinct without case (so no two STRUCT fields can be
    confused under Spark's case-insensitive resolution)."""
    names = list(source.columns)
    return all(PLAIN_NAME.match(n) for n in names) and len({n.lower() for n in names}) == len(names)


def _key(name: str) -> exp.Expression:
    """``"name":`` — in a plain line, only ever the key ``name`` (see the module docstring)."""
    return lit(f'"{name}":')


def is_plain(line: exp.Expression, bad_utf8: exp.Expression, source: TableSource) -> exp.Expression:
    """TRUE for a plain line (see the module docstring), FALSE for every other (never NULL)."""
    test = exp.and_(
        exp.Not(this=bad_utf8),
        exp.RegexpLike(this=line.copy(), expression=lit(plain_line(list(source.columns)))),
    )
    return exp.func("COALESCE", test, exp.false())


def text_select(
    lines_table: str, source: TableSource, partitions: list[str], where: exp.Expression
) -> exp.Select:
    """The text relation (relation.py) of the plain lines of ``lines_table`` (``where``).

    A plain line with a repeated key is corrupt, as on the general path: it has more
    ``":`` (keys) than declared names present."""
    names = list(source.columns)
    line = col("_line")
    struct = "STRUCT<" + ", ".join(f"`{n}`: STRING" for n in names) + ">"
    parsed = exp.select(
        *[col(c) for c in LINEAGE],
        *[alias(partition_expr(p), p) for p in partitions],
        line.copy(),
        alias(_fn("FROM_JSON", line.copy(), lit(struct), json_options()), "_v"),
        *[
            alias(exp.Not(this=_fn("CONTAINS", line.copy(), _key(n))), f"_a{i}")
            for i, n in enumerate(names)
        ],
    ).from_(exp.to_table(lines_table))
    parsed = parsed.where(where)
    present: exp.Expression = _int(0)
    for i in range(len(names)):
        present = exp.Add(this=present, expression=_case(col(f"_a{i}"), _int(0), _int(1)))
    keys = _fn("REGEXP_COUNT", line.copy(), lit('":'))
    checked = exp.select(exp.Star(), alias(exp.EQ(this=keys, expression=present), "_ok")).from_(
        sub(parsed, "_p")
    )
    return exp.select(
        *[col(c) for c in [*LINEAGE, *partitions, "_line"]],
        col("_ok"),
        *[
            alias(_case(col("_ok"), exp.Dot(this=col("_v"), expression=ident(n))), f"_s{i}")
            for i, n in enumerate(names)
        ],
        *[alias(exp.false(), f"_n{i}") for i in range(len(names))],
        *[col(f"_a{i}") for i in range(len(names))],
        alias(exp.Cast(this=exp.null(), to=exp.DataType.build("STRING")), "_undeclared"),
    ).from_(sub(checked, "_k"))


def rescue_value(i: int, name: str) -> exp.Expression:
    """The JSON text of column ``name``'s value (only asked for a present, non-null one)."""
    quoted = exp.RegexpLike(this=col("_line"), expression=lit(f'"{name}":[ \\t]*+"'))
    return _fn(RAW_JSON, _case(quoted, json_quote(col(f"_s{i}")), col(f"_s{i}")))
