"""Declared column types: parsed once with sqlglot, classified for casting.

A contract says ``DECIMAL(10,2)`` or ``TIMESTAMP``; every engine must cast text to that
type with the same rules, so the type is parsed into a sqlglot ``DataType`` and given a
*kind* the reader compiles cast rules for.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from functools import lru_cache

from sqlglot import exp
from sqlglot.errors import ParseError

from .type_names import type_pattern, unknown_type_message

TYPE_TEXT = re.compile(type_pattern())

INTEGER_TYPES = {
    exp.DataType.Type.TINYINT,
    exp.DataType.Type.SMALLINT,
    exp.DataType.Type.INT,
    exp.DataType.Type.BIGINT,
}
FLOAT_TYPES = {exp.DataType.Type.FLOAT, exp.DataType.Type.DOUBLE}
STRING_TYPES = {
    exp.DataType.Type.VARCHAR,
    exp.DataType.Type.TEXT,
    exp.DataType.Type.CHAR,
    exp.DataType.Type.NVARCHAR,
    exp.DataType.Type.NCHAR,
}
KINDS = ("integer", "decimal", "float", "string", "boolean", "date", "timestamp")


@dataclass(frozen=True)
class ColumnType:
    """A declared type: the sqlglot tree, its canonical text and its cast kind."""

    text: str
    datatype: exp.DataType
    kind: str
    canonical: str  # upper-case spelling used in the schema fingerprint, e.g. DECIMAL(10,2)


class UnknownTypeError(ValueError):
    """The type text is not a type sluicegate can cast to."""


def parse_type(text: str) -> ColumnType:
    """Parse a declared SQL type.

    A contract names a handful of types many times (every column, every ``.parsed`` of a
    spec): the parse is done once per text and each call gets its own copy of the sqlglot
    tree, so a caller that puts it into a statement cannot change what the next one gets.

    >>> parse_type("DECIMAL(10,2)").kind
    'decimal'
    """
    parsed = _parse_type(text)
    return replace(parsed, datatype=parsed.datatype.copy())


@lru_cache(maxsize=256)
def _parse_type(text: str) -> ColumnType:
    """``parse_type`` without the copy (an error is not cached: it is raised again)."""
    if not TYPE_TEXT.match(text):  # the documented names only, not every sqlglot alias
        raise UnknownTypeError(unknown_type_message(text))
    try:
        dt = exp.DataType.build(text.strip(), dialect="duckdb")
    except (ParseError, ValueError) as exc:
        raise UnknownTypeError(unknown_type_message(text)) from exc
    t = dt.this
    if t in INTEGER_TYPES:
        kind = "integer"
    elif t == exp.DataType.Type.DECIMAL:
        kind = "decimal"
    elif t in FLOAT_TYPES:
        kind = "float"
    elif t in STRING_TYPES:
        kind = "string"
    elif t == exp.DataType.Type.BOOLEAN:
        kind = "boolean"
    elif t == exp.DataType.Type.DATE:
        kind = "date"
    elif t in (
        exp.DataType.Type.TIMESTAMP,
        exp.DataType.Type.TIMESTAMPNTZ,
        exp.DataType.Type.DATETIME,
    ):
        kind = "timestamp"
    else:
        raise UnknownTypeError(unknown_type_message(text))
    canonical = _CANONICAL.get(t)
    if kind == "decimal":
        params = [p.this.name for p in dt.expressions] or ["18", "3"]
        _check_decimal(text, params)
        canonical = f"DECIMAL({','.join(params)})"
        dt = exp.DataType.build(canonical)
    else:
        dt = exp.DataType.build(canonical)
    return ColumnType(text=text, datatype=dt, kind=kind, canonical=canonical)


MAX_DECIMAL_PRECISION = 38  # DuckDB's and Spark's limit


def _check_decimal(text: str, params: list[str]) -> None:
    """DECIMAL(p,s) with 1 <= p <= 38 and 0 <= s <= p, which both engines can hold."""
    try:
        p, s = int(params[0]), int(params[1]) if len(params) > 1 else 0
    except ValueError:
        raise UnknownTypeError(f"type '{text}': precision and scale must be numbers") from None
    if len(params) > 2 or not 1 <= p <= MAX_DECIMAL_PRECISION or not 0 <= s <= p:
        raise UnknownTypeError(
            f"type '{text}': DECIMAL(p,s) needs 1 <= p <= {MAX_DECIMAL_PRECISION} and 0 <= s <= p"
        )


_CANONICAL = {
    exp.DataType.Type.TINYINT: "TINYINT",
    exp.DataType.Type.SMALLINT: "SMALLINT",
    exp.DataType.Type.INT: "INTEGER",
    exp.DataType.Type.BIGINT: "BIGINT",
    exp.DataType.Type.FLOAT: "DOUBLE",
    exp.DataType.Type.DOUBLE: "DOUBLE",
    exp.DataType.Type.BOOLEAN: "BOOLEAN",
    exp.DataType.Type.DATE: "DATE",
    exp.DataType.Type.TIMESTAMP: "TIMESTAMP",
    exp.DataType.Type.TIMESTAMPNTZ: "TIMESTAMP",
    exp.DataType.Type.DATETIME: "TIMESTAMP",
    **{t: "VARCHAR" for t in STRING_TYPES},
}
