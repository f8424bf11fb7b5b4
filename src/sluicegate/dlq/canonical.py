"""Canonical JSON of a DLQ row, built as one SQL string expression per dialect.

The DLQ key (``_dlq_sk``) hashes this text, so every engine must produce it byte for
byte. Engines' own JSON writers disagree (Spark's ``to_json`` drops NULL fields and
writes ``2024-03-05T10:11:12.000Z``; DuckDB's writes other number forms), so the text
is spelled out explicitly: one value formatter per declared *kind* (see
``contract/coltypes.py``), concatenated in a fixed key order. ``docs/dlq.md`` is the
normative definition; ``tests/unit/test_dlq_canonical.py`` pins it with a test vector.
A string is the one place an engine's writer is used: DuckDB's ``to_json`` escapes as
Python does but for the hex case of nine controls, fixed after it (cheaper to plan than
the portable chain of REPLACEs Spark runs).

Rules:

* an object, no whitespace, keys in order: the table's data columns (Hive partition
  columns, then declared columns in declared order), then ``_source_file``,
  ``_source_line``, ``_logical_date``; every key is present, NULL is ``null``;
* integer: decimal digits, optional ``-``; decimal: a JSON number with exactly the
  declared scale (``-12.50``), never an exponent; float: 15 significant digits in
  C ``%.14e`` form (``1.00000000000000e-01``), NaN and infinities as the strings
  ``"NaN"``, ``"Infinity"``, ``"-Infinity"``;
* boolean: ``true``/``false``; date: ``"YYYY-MM-DD"``; timestamp:
  ``"YYYY-MM-DDTHH:MM:SS.ffffff"`` (microseconds, no zone: values are UTC wall clock);
* string: JSON string, UTF-8 as is; ``"`` ``\\`` and U+0000–U+001F escaped exactly as
  Python's ``json.dumps(ensure_ascii=False)`` does (``\\n`` ``\\r`` ``\\t`` ``\\b``
  ``\\f``, others ``\\u00XX`` lower-case hex).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlglot import exp

from ..compile.render import col, lit
from ..contract.models import Contract

LINEAGE_FIELDS = (("_source_file", "string"), ("_source_line", "integer"))
DATE_FIELD = ("_logical_date", "date")
FLOAT_FORMAT = "%.14e"
TIMESTAMP_FORMATS = {
    "duckdb": "%Y-%m-%dT%H:%M:%S.%f",
    "spark": "yyyy-MM-dd'T'HH:mm:ss.SSSSSS",
}
TIMESTAMP_FUNCTIONS = {"duckdb": "STRFTIME", "spark": "DATE_FORMAT"}

# Python's json.dumps(ensure_ascii=False) escapes: backslash first, then the quote,
# then the five short forms, then every other control character as \u00xx.
_SHORT = {"\b": "\\b", "\f": "\\f", "\n": "\\n", "\r": "\\r", "\t": "\\t"}
STRING_ESCAPES: tuple[tuple[str, str], ...] = (
    ("\\", "\\\\"),
    ('"', '\\"'),
    *((chr(i), _SHORT.get(chr(i), f"\\u{i:04x}")) for i in range(32)),
)


@dataclass(frozen=True)
class Field:
    """One key of the canonical object: its name, value expression and value kind."""

    name: str
    expr: exp.Expression
    kind: str


def supported(dialect: str) -> bool:
    """Can the canonical JSON be rendered for ``dialect``? (It must run identically.)"""
    return dialect in TIMESTAMP_FORMATS


def _require(dialect: str) -> None:
    if not supported(dialect):
        raise ValueError(
            f"the DLQ canonical JSON is defined for {sorted(TIMESTAMP_FORMATS)}, not '{dialect}'"
        )


def _search(ch: str) -> exp.Expression:
    # Control characters are spelled CHR(n): a raw control byte in SQL text is fragile.
    return exp.Chr(expressions=[exp.Literal.number(ord(ch))]) if ord(ch) < 32 else lit(ch)


#: The controls DuckDB's ``to_json`` writes as upper-case ``\\u00XX`` (Python: lower case).
_UPPER_HEX = tuple(i for i in range(32) if chr(i) not in _SHORT and f"{i:04x}" != f"{i:04X}")


def json_string(text: exp.Expression, dialect: str) -> exp.Expression:
    """``text`` (non-NULL) as a JSON string literal, quotes included: the dialect's own
    writer where :data:`STRING_WRITERS` has one, else the portable chain of REPLACEs."""
    return STRING_WRITERS.get(dialect, _portable_json_string)(text)


def _portable_json_string(text: exp.Expression) -> exp.Expression:
    escaped = text
    for ch, rep in STRING_ESCAPES:
        escaped = exp.Anonymous(this="REPLACE", expressions=[escaped, _search(ch), lit(rep)])
    return exp.Concat(expressions=[lit('"'), escaped, lit('"')])


def _duckdb_json_string(text: exp.Expression) -> exp.Expression:
    """DuckDB's ``to_json`` escapes exactly as ``json.dumps(ensure_ascii=False)`` but for
    the hex case of nine controls (``\\u000B``): lower-cased here. Why not the portable
    chain of 34 REPLACEs: DuckDB plans that chain per string column, ~40 ms for a DLQ
    row of ten of them, paid by every publish whatever its size (a watch batch's whole
    DLQ step took 65 ms). An escaped backslash (``\\\\``) is set aside as CHR(1) first,
    which a JSON text never holds raw, so the text ``\\u000B`` of a value is not touched."""
    backslash = "\\"
    out: exp.Expression = exp.cast(exp.Anonymous(this="TO_JSON", expressions=[text]), "VARCHAR")
    out = exp.Anonymous(this="REPLACE", expressions=[out, lit(backslash * 2), _search(chr(1))])
    for i in _UPPER_HEX:
        upper, lower = f"{backslash}u{i:04X}", f"{backslash}u{i:04x}"
        out = exp.Anonymous(this="REPLACE", expressions=[out, lit(upper), lit(lower)])
    return exp.Anonymous(this="REPLACE", expressions=[out, _search(chr(1)), lit(backslash * 2)])


#: Dialects whose own JSON string writer is used (with its fix); others: the REPLACE chain.
STRING_WRITERS: dict[str, Callable[[exp.Expression], exp.Expression]] = {
    "duckdb": _duckdb_json_string
}


def _float(x: exp.Expression, dialect: str) -> exp.Expression:
    inf = exp.cast(lit("Infinity"), "DOUBLE")
    return exp.Case(
        ifs=[
            exp.If(this=exp.Anonymous(this="ISNAN", expressions=[x.copy()]), true=lit('"NaN"')),
            exp.If(this=exp.EQ(this=x.copy(), expression=inf), true=lit('"Infinity"')),
            exp.If(
                this=exp.EQ(this=x.copy(), expression=exp.Neg(this=inf.copy())),
                true=lit('"-Infinity"'),
            ),
        ],
        default=exp.Anonymous(
            this="PRINTF", expressions=[lit(FLOAT_FORMAT), exp.cast(x.copy(), "DOUBLE")]
        ),
    )


def json_value(x: exp.Expression, kind: str, dialect: str) -> exp.Expression:
    """The canonical JSON text of one value of ``kind`` (never NULL: NULL is ``null``)."""
    _require(dialect)
    if kind == "string":
        v = json_string(exp.cast(x.copy(), "VARCHAR"), dialect)
    elif kind in ("integer", "decimal"):
        v = exp.cast(x.copy(), "VARCHAR")
    elif kind == "float":
        v = _float(x, dialect)
    elif kind == "boolean":
        v = exp.Case(ifs=[exp.If(this=x.copy(), true=lit("true"))], default=lit("false"))
    elif kind == "date":
        v = exp.Concat(expressions=[lit('"'), exp.cast(x.copy(), "VARCHAR"), lit('"')])
    elif kind == "timestamp":
        formatted = exp.Anonymous(
            this=TIMESTAMP_FUNCTIONS[dialect],
            expressions=[x.copy(), lit(TIMESTAMP_FORMATS[dialect])],
        )
        v = exp.Concat(expressions=[lit('"'), formatted, lit('"')])
    else:
        raise ValueError(f"no canonical JSON form for kind '{kind}'")
    return exp.Case(
        ifs=[exp.If(this=exp.Is(this=x.copy(), expression=exp.null()), true=lit("null"))],
        default=v,
    )


def json_object(fields: list[Field], dialect: str) -> exp.Expression:
    """``{"k1":v1,"k2":v2,…}`` in the order of ``fields`` (adjacent literals merged)."""
    parts: list[exp.Expression] = []
    pending = "{"
    for i, f in enumerate(fields):
        pending += ("," if i else "") + '"' + f.name + '":'
        parts.append(lit(pending))
        parts.append(json_value(f.expr, f.kind, dialect))
        pending = ""
    parts.append(lit(pending + "}"))
    return exp.Concat(expressions=parts)


def row_fields(contract: Contract, partitions: list[str], table: str | None = None) -> list[Field]:
    """The fields of a DLQ row's canonical JSON, in canonical order."""
    declared = contract.source.columns
    out = [Field(p, col(p, table), "string") for p in partitions if p not in declared]
    out += [Field(n, col(n, table), spec.parsed.kind) for n, spec in declared.items()]
    out += [Field(n, col(n, table), k) for n, k in (*LINEAGE_FIELDS, DATE_FIELD)]
    return out


def row_json(
    contract: Contract, partitions: list[str], dialect: str, table: str | None = None
) -> exp.Expression:
    """The canonical JSON text of the row (``_row_data`` and the key's document)."""
    return json_object(row_fields(contract, partitions, table), dialect)
