"""Text → declared type with TRY semantics, the same rules on every engine.

Engines disagree on casts (DuckDB's TRY_CAST rounds '1.5' to 2 for INTEGER, accepts '1e3'
and drops timestamp offsets; Spark's ANSI cast raises). sluicegate validates the text with
a regular expression first and casts only what matches, so a value either casts exactly or
is a ``type_mismatch`` — never silently altered. The rules (documented in
docs/contract-reference.md):

* integer: optional sign and digits, surrounding spaces ignored; must fit the type.
* decimal: sign, digits, optional fraction (no exponent); rounded half-up to the scale;
  must fit the precision.
* float (DOUBLE): decimal or exponent notation; ``NaN``/``Infinity`` only with
  ``finite: false``.
* boolean: ``true``/``false`` in any case.
* date/timestamp: the declared strptime ``formats`` tried in order, else ISO 8601
  (``DEFAULT_TIMESTAMP_FORMATS``); offsets other than ``Z`` do not match.
* string: any scalar; objects/arrays are a mismatch (checked by the reader).
"""

from __future__ import annotations

from sqlglot import exp

from ..contract.models import ColumnSpec
from .render import lit

INT_RE = r"^\s*[+-]?[0-9]+\s*$"
DEC_RE = r"^\s*[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)\s*$"
FLOAT_RE = r"^\s*[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]+)?\s*$"
NONFINITE_RE = r"^\s*[+-]?(NaN|nan|Infinity|inf|Inf)\s*$"
BOOL_RE = r"^\s*(?i:true|false)\s*$"

DEFAULT_TIMESTAMP_FORMATS = [
    "%Y-%m-%dT%H:%M:%S.%fZ",
    "%Y-%m-%dT%H:%M:%SZ",
    "%Y-%m-%dT%H:%M:%S.%f",
    "%Y-%m-%dT%H:%M:%S",
    "%Y-%m-%d %H:%M:%S.%f",
    "%Y-%m-%d %H:%M:%S",
]
DEFAULT_DATE_FORMATS = ["%Y-%m-%d"]

# strptime directive → Java DateTimeFormatter pattern (Spark's try_to_timestamp).
STRPTIME_TO_JAVA = {
    "%Y": "yyyy",
    "%m": "MM",
    "%d": "dd",
    "%H": "HH",
    "%M": "mm",
    "%S": "ss",
    "%f": "SSSSSS",
    "%y": "yy",
    "%b": "MMM",
    "%B": "MMMM",
    "%j": "DDD",
    "%%": "%",
}


def matches(text: exp.Expression, pattern: str) -> exp.Expression:
    """``text`` fully matches ``pattern`` (anchored regex; portable: regexp_matches / RLIKE)."""
    return exp.RegexpLike(this=text.copy(), expression=lit(pattern))


def trimmed(text: exp.Expression) -> exp.Expression:
    return exp.Trim(this=text.copy())


def cast_text(text: exp.Expression, spec: ColumnSpec, dialect: str) -> exp.Expression:
    """The typed value of ``text`` for ``spec``, or NULL when it does not cast."""
    kind = spec.parsed.kind
    target = spec.parsed.datatype
    if kind == "string":
        return text.copy()
    if kind == "integer":
        return _guarded(text, INT_RE, exp.TryCast(this=trimmed(text), to=target.copy()))
    if kind == "decimal":
        return _guarded(text, DEC_RE, exp.TryCast(this=trimmed(text), to=target.copy()))
    if kind == "float":
        pattern = FLOAT_RE if spec.finite else f"({FLOAT_RE})|({NONFINITE_RE})"
        value = exp.TryCast(this=trimmed(text), to=target.copy())
        if not spec.finite:
            value = _nonfinite_aware(text, target, dialect)
        return _guarded(text, pattern, value)
    if kind == "boolean":
        return _guarded(
            text,
            BOOL_RE,
            exp.EQ(this=exp.Lower(this=trimmed(text)), expression=lit("true")),
        )
    formats = spec.formats or (
        DEFAULT_DATE_FORMATS if kind == "date" else DEFAULT_TIMESTAMP_FORMATS
    )
    parsed = strptime_any(text, formats, dialect)
    if kind == "date":
        return exp.TryCast(this=parsed, to=exp.DataType.build("DATE"))
    return parsed


def _guarded(text: exp.Expression, pattern: str, value: exp.Expression) -> exp.Expression:
    return exp.Case(ifs=[exp.If(this=matches(text, pattern), true=value)])


def _nonfinite_aware(text: exp.Expression, target: exp.DataType, dialect: str) -> exp.Expression:
    word = exp.Lower(this=trimmed(text))
    return exp.Case(
        ifs=[
            exp.If(
                this=exp.In(this=word, expressions=[lit("nan"), lit("+nan"), lit("-nan")]),
                true=exp.Cast(this=lit("NaN"), to=target.copy()),
            ),
            exp.If(
                this=exp.In(
                    this=word.copy(),
                    expressions=[lit("infinity"), lit("+infinity"), lit("inf"), lit("+inf")],
                ),
                true=exp.Cast(this=lit("Infinity"), to=target.copy()),
            ),
            exp.If(
                this=exp.In(this=word.copy(), expressions=[lit("-infinity"), lit("-inf")]),
                true=exp.Cast(this=lit("-Infinity"), to=target.copy()),
            ),
        ],
        default=exp.TryCast(this=trimmed(text), to=target.copy()),
    )


def strptime_any(text: exp.Expression, formats: list[str], dialect: str) -> exp.Expression:
    """Parse ``text`` with the first matching format; NULL when none matches."""
    if dialect == "duckdb":
        return exp.Anonymous(
            this="try_strptime",
            expressions=[text.copy(), exp.Array(expressions=[lit(f) for f in formats])],
        )
    if dialect == "spark":
        attempts = [
            exp.Anonymous(this="try_to_timestamp", expressions=[text.copy(), lit(java_pattern(f))])
            for f in formats
        ]
        return (
            exp.Coalesce(this=attempts[0], expressions=attempts[1:])
            if len(attempts) > 1
            else attempts[0]
        )
    raise ValueError(f"no timestamp parsing rule for dialect '{dialect}'")


def java_pattern(fmt: str) -> str:
    """Translate a strptime format to a Java DateTimeFormatter pattern (literals quoted)."""
    out, i, literal = [], 0, ""
    while i < len(fmt):
        if fmt[i] == "%" and i + 1 < len(fmt):
            d = fmt[i : i + 2]
            if d not in STRPTIME_TO_JAVA:
                raise ValueError(f"strptime directive {d} has no Spark equivalent")
            if literal:
                out.append(_quote_java(literal))
                literal = ""
            out.append(STRPTIME_TO_JAVA[d])
            i += 2
        else:
            literal += fmt[i]
            i += 1
    if literal:
        out.append(_quote_java(literal))
    return "".join(out)


def _quote_java(s: str) -> str:
    if all(ch in " -/:.," for ch in s):
        return s
    return "'" + s.replace("'", "''") + "'"
