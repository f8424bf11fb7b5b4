"""Text → declared type with TRY semantics: one set of rules for every engine.

Engines disagree on casts (DuckDB's TRY_CAST rounds ``'1.5'`` to 2 for INTEGER, accepts
``'1e3'`` and ``'1_000'`` and drops timestamp offsets; Spark's ANSI cast raises; Spark's
``$`` matches before a final newline). So sluicegate first checks the text against an
anchored regular expression written in the common subset of RE2 (DuckDB) and
java.util.regex (Spark): ``^``, ``\\z``, character classes, ``(?i:…)``. Only text that
matches is cast; the cast of matching text means the same on both engines. A value either
casts to what it says or is a ``type_mismatch`` — never silently altered (decimals are
rounded half-up to the declared scale, as the type asks). The rules, in
docs/contract-reference.md § "Cast rules":

* surrounding ASCII spaces are ignored for every non-string type (tabs are not);
* integer: optional sign and digits; must fit the type;
* decimal: plain or exponent notation (an exponent of at most four digits); rounded
  half-up to the scale; must fit the precision;
* double: plain or exponent notation; must be finite; ``NaN``/``Infinity`` (any case, with
  an optional sign, also ``inf``) only with ``finite: false``;
* boolean: ``true``/``false`` in any case;
* date/timestamp: the declared strptime ``formats``, tried in order, each with fixed field
  widths (``%d`` is two digits: ``5/3/2024`` does not match ``%d/%m/%Y``); a value matching
  none is a mismatch; no time zones other than a literal in the format;
* string: any scalar (objects and arrays are a mismatch; checked by the reader).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from sqlglot import exp

from ..contract.formats import (  # the vocabulary: which directives, their widths
    DEFAULT_DATE_FORMATS,
    DEFAULT_TIMESTAMP_FORMATS,
    DIRECTIVES,
    STRPTIME_TO_JAVA,
    YEAR_RE,
    FormatError,
    check_format,
)
from .render import lit

if TYPE_CHECKING:
    from ..contract.models import ColumnSpec

__all__ = [
    "DEFAULT_DATE_FORMATS",
    "DEFAULT_TIMESTAMP_FORMATS",
    "DIRECTIVES",
    "STRPTIME_TO_JAVA",
    "YEAR_RE",
    "FormatError",
    "cast_text",
    "check_format",
    "format_regex",
    "java_pattern",
    "strptime_any",
]

END = r"\z"  # end of text in RE2 and Java; '$' also matches before a final \n in Java
SP = " *"
INT_RE = rf"^{SP}[+-]?[0-9]+{SP}{END}"
#: An exponent has at most four digits: past that the engines part ways (DuckDB's decimal
#: parser refuses '0E40000', Java's BigDecimal reads it as 0), and no real feed writes one.
_NUM = r"[+-]?([0-9]+(\.[0-9]*)?|\.[0-9]+)([eE][+-]?[0-9]{1,4})?"
DEC_RE = rf"^{SP}{_NUM}{SP}{END}"
FLOAT_RE = DEC_RE
NONFINITE_RE = rf"^{SP}[+-]?(?i:nan|inf|infinity){SP}{END}"
BOOL_RE = rf"^{SP}(?i:true|false){SP}{END}"


def matches(text: exp.Expression, pattern: str) -> exp.Expression:
    """``text`` matches the anchored ``pattern`` (regexp_matches in DuckDB, RLIKE in Spark)."""
    return exp.RegexpLike(this=text.copy(), expression=lit(pattern))


def trimmed(text: exp.Expression) -> exp.Expression:
    """Text without surrounding spaces (TRIM removes spaces only, on both engines)."""
    return exp.Trim(this=text.copy())


def cast_text(text: exp.Expression, spec: ColumnSpec, dialect: str) -> exp.Expression:
    """The typed value of ``text`` for ``spec``, or NULL when it does not cast.

    NULL text gives NULL (absent and JSON null are not mismatches); the reader flags a
    mismatch where the text is not NULL but this value is.
    """
    kind = spec.parsed.kind
    target = spec.parsed.datatype
    if kind == "string":
        return text.copy()
    if kind == "integer":
        return _guarded(text, INT_RE, exp.TryCast(this=trimmed(text), to=target.copy()))
    if kind == "decimal":
        return _guarded(text, DEC_RE, exp.TryCast(this=trimmed(text), to=target.copy()))
    if kind == "float":
        value = exp.TryCast(this=trimmed(text), to=target.copy())
        finite = _guarded(text, FLOAT_RE, _finite_or_null(value, text))
        if spec.finite:
            return finite
        return exp.Case(
            ifs=[exp.If(this=matches(text, NONFINITE_RE), true=_nonfinite(text, target))],
            default=finite,
        )
    if kind == "boolean":
        return _guarded(
            text,
            BOOL_RE,
            exp.EQ(this=exp.Lower(this=trimmed(text)), expression=lit("true")),
        )
    formats = spec.formats or (
        DEFAULT_DATE_FORMATS if kind == "date" else DEFAULT_TIMESTAMP_FORMATS
    )
    parsed = strptime_any(trimmed(text), formats, dialect)
    if kind == "date":
        return exp.TryCast(this=parsed, to=exp.DataType.build("DATE"))
    return parsed


def _guarded(text: exp.Expression, pattern: str, value: exp.Expression) -> exp.Expression:
    return exp.Case(ifs=[exp.If(this=matches(text, pattern), true=value)])


#: A mantissa with a non-zero digit (the text before any exponent).
NONZERO_MANTISSA_RE = r"^[^eE]*[1-9]"


def _finite_or_null(value: exp.Expression, text: exp.Expression) -> exp.Expression:
    """``value`` unless it overflowed to ±Infinity (``'1e400'``) or underflowed to zero
    (``'1e-400'``: a non-zero mantissa read as 0.0): then NULL, a mismatch."""
    inf = exp.Cast(this=lit("Infinity"), to=exp.DataType.build("DOUBLE"))
    finite = exp.LT(this=exp.Abs(this=value.copy()), expression=inf)
    underflow = exp.and_(
        exp.EQ(this=value.copy(), expression=exp.Literal.number(0)),
        matches(text, NONZERO_MANTISSA_RE),
    )
    return exp.Case(ifs=[exp.If(this=exp.and_(finite, exp.not_(underflow)), true=value)])


def _nonfinite(text: exp.Expression, target: exp.DataType) -> exp.Expression:
    """``NaN``, ``Infinity`` or ``-Infinity`` for text matching NONFINITE_RE."""
    word = exp.Lower(this=trimmed(text))
    return exp.Case(
        ifs=[
            exp.If(
                this=matches(word, "nan"),
                true=exp.Cast(this=lit("NaN"), to=target.copy()),
            ),
            exp.If(
                this=matches(word, "^-"),
                true=exp.Cast(this=lit("-Infinity"), to=target.copy()),
            ),
        ],
        default=exp.Cast(this=lit("Infinity"), to=target.copy()),
    )


def format_regex(fmt: str) -> str:
    """The anchored regex a value must match for ``fmt``: fixed field widths, literal text."""
    check_format(fmt)
    out, i = ["^"], 0
    while i < len(fmt):
        if fmt[i] == "%" and i + 1 < len(fmt):
            out.append(DIRECTIVES[fmt[i : i + 2]][0])
            i += 2
        else:
            out.append(_re_literal(fmt[i]))
            i += 1
    out.append(END)
    return "".join(out)


def _re_literal(ch: str) -> str:
    return ch if ch.isalnum() or ch == " " else "\\" + ch


def strptime_any(text: exp.Expression, formats: list[str], dialect: str) -> exp.Expression:
    """Parse ``text`` with the first format it matches and that gives a real date/time.

    Each format is guarded by its fixed-width regex (strptime implementations differ on
    one-digit fields), then parsed; the first non-NULL result wins (COALESCE).
    """
    attempts = [_parse_one(text, f, dialect) for f in formats]
    if len(attempts) == 1:
        return attempts[0]
    return exp.Coalesce(this=attempts[0], expressions=attempts[1:])


def _parse_one(text: exp.Expression, fmt: str, dialect: str) -> exp.Expression:
    if dialect == "duckdb":
        parse: exp.Expression = exp.Anonymous(
            this="try_strptime", expressions=[text.copy(), lit(fmt)]
        )
    elif dialect == "spark":
        parse = exp.Anonymous(
            this="try_to_timestamp", expressions=[text.copy(), lit(java_pattern(fmt))]
        )
    else:
        raise ValueError(f"no timestamp parsing rule for dialect '{dialect}'")
    return _guarded(text, format_regex(fmt), parse)


def java_pattern(fmt: str) -> str:
    """Translate a strptime format to a Java DateTimeFormatter pattern (literals quoted)."""
    check_format(fmt)
    out, i, literal = [], 0, ""
    while i < len(fmt):
        if fmt[i] == "%" and i + 1 < len(fmt):
            d = fmt[i : i + 2]
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
