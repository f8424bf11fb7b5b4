"""NDJSON lines → the typed relation, on DuckDB (the text relation is relation.py's).

What a well-formed record is (docs/contract-reference.md § "JSON edge cases"): a line that
is strict RFC 8259 JSON whose top-level value is an object with distinct keys. Three
extensions DuckDB's parser (yyjson) accepts are rejected here, because Spark's Jackson
rejects them too: trailing commas, and non-standard spellings of non-finite numbers
(``nan``, ``inf``, ``-NaN`` …). Only ``NaN``, ``Infinity`` and ``-Infinity`` — the tokens
Python's ``json`` module writes — are numbers (the finite rules then apply). Duplicate keys
make the record corrupt: DuckDB keeps the first value, Spark the last, so neither may win.

Cost model (1M lines): each JSON function call parses the line again, so the reader calls
exactly three per line (``json_valid``, ``json_extract_string`` over every declared path,
``json_keys``); the yyjson-only extensions are looked for with a cheap filter (a comma
before a closing bracket, the letters nan/inf in any case) and checked exactly only on the
lines it lets through; ``json_type`` runs only for values that look like an object or
array; the duplicate-key check and the undeclared-field object only for the ~1% of lines
with keys beyond the declared ones.
"""

from __future__ import annotations

from sqlglot import exp

from ...contract.models import TableSource
from ..render import col, lit
from . import relation
from .duckdb_json import DUCKDB
from .relation import LINEAGE, alias, json_path, sub, with_partitions

OBJECT_START = r"^[ \t\r\n]*\{"
# Lines that may use a yyjson-only extension: checked exactly (cheap filter, rare hits).
MAYBE_TRAILING_COMMA = r",[ \t\r\n]*[\]}]"
# Strings, and the allowed non-finite tokens in value position, removed before the check.
STRINGS_AND_ALLOWED = r'"(?:[^"\\]|\\.)*"|([:,\[][ \t\r\n]*)(?:NaN|-?Infinity)'
LENIENT = r",[ \t\r\n]*[\]}]|(?i:nan|inf)"


def _fn(name: str, *args: exp.Expression) -> exp.Anonymous:
    return exp.Anonymous(this=name, expressions=list(args))


def _bracket(column: str, i: int) -> exp.Expression:
    """Element i (0-based here) of a list column; sqlglot renders the dialect's offset."""
    return exp.Bracket(this=col(column), expressions=[exp.Literal.number(i + 1)], offset=1)


def lenient_only(line: exp.Expression) -> exp.Expression:
    """TRUE when a line yyjson accepts uses a trailing comma or a non-standard NaN/Inf."""
    # ILIKE, not contains(lower(line)): lower() copies every line (measured: 0.66 vs 0.60
    # CPU s at 1M lines for the two tests, benchmarks/RESULTS.md)
    suspicious = exp.or_(
        exp.RegexpLike(this=line.copy(), expression=lit(MAYBE_TRAILING_COMMA)),
        exp.ILike(this=line.copy(), expression=lit("%nan%")),
        exp.ILike(this=line.copy(), expression=lit("%inf%")),
    )
    stripped = exp.RegexpReplace(
        this=line.copy(),
        expression=lit(STRINGS_AND_ALLOWED),
        replacement=lit("\\1"),
        modifiers=lit("g"),
    )
    check = exp.RegexpLike(this=stripped, expression=lit(LENIENT))
    return exp.Case(ifs=[exp.If(this=suspicious, true=check)], default=exp.false())


def text_select(lines_table: str, source: TableSource, partitions: list[str]) -> exp.Select:
    """The text relation (see relation.py) of NDJSON lines, DuckDB dialect."""
    names = list(source.columns)
    n = len(names)
    line = col("_line")
    valid = exp.Case(
        ifs=[exp.If(this=col("_bad_utf8"), true=exp.false())],
        default=_fn("json_valid", line),
    )
    well_formed = exp.Case(
        ifs=[
            exp.If(
                this=valid,
                true=exp.and_(
                    exp.paren(
                        exp.or_(
                            _fn("starts_with", line.copy(), lit("{")),
                            exp.RegexpLike(this=line.copy(), expression=lit(OBJECT_START)),
                        )
                    ),
                    exp.Not(this=lenient_only(line)),
                ),
            )
        ],
        default=exp.false(),
    )
    j = exp.select(
        *[col(c) for c in LINEAGE], *[col(p) for p in partitions], line, alias(well_formed, "_obj")
    ).from_(with_partitions(lines_table, partitions, ["_line", "_bad_utf8"]), copy=False)

    def when_obj(e: exp.Expression) -> exp.Expression:
        return exp.Case(ifs=[exp.If(this=col("_obj"), true=e)])

    paths = exp.Array(expressions=[lit(json_path(nm)) for nm in names])
    carried = [*LINEAGE, *partitions, "_line", "_obj"]
    v = exp.select(
        *[col(c) for c in carried],
        alias(when_obj(_fn("json_extract_string", line.copy(), paths)), "_v"),
        alias(when_obj(_fn("json_keys", line.copy())), "_k"),
    ).from_(sub(j, "_j"), copy=False)

    # each value is taken out of the list once (array_extract copies the string)
    w = exp.select(
        *[col(c) for c in carried],
        col("_k"),
        *[alias(_bracket("_v", i), f"_t{i}") for i in range(n)],
    ).from_(sub(v, "_v"), copy=False)

    present = [_fn("list_contains", col("_k"), lit(nm)) for nm in names]
    counted = exp.paren(
        _sum([exp.Cast(this=p.copy(), to=exp.DataType.build("INTEGER")) for p in present])
    )
    extra = exp.NEQ(this=exp.func("LEN", col("_k")), expression=counted)
    nested = []
    for i, nm in enumerate(names):
        value = col(f"_t{i}")
        looks_nested = exp.or_(
            _fn("starts_with", value.copy(), lit("{")),
            _fn("starts_with", value.copy(), lit("[")),
        )
        is_nested = exp.In(
            this=_fn("json_type", line.copy(), lit(json_path(nm))),
            expressions=[lit("OBJECT"), lit("ARRAY")],
        )
        nested.append(
            alias(
                exp.Case(ifs=[exp.If(this=looks_nested, true=is_nested)], default=exp.false()),
                f"_n{i}",
            )
        )
    k = exp.select(
        *[col(c) for c in carried],
        *[col(f"_t{i}") for i in range(n)],
        col("_k"),
        alias(exp.func("COALESCE", extra, exp.false()), "_e"),
        *nested,
        *[alias(exp.Not(this=p), f"_a{i}") for i, p in enumerate(present)],
    ).from_(sub(w, "_w"), copy=False)

    dup = exp.Case(
        ifs=[
            exp.If(
                this=col("_e"),
                true=exp.NEQ(
                    this=exp.func("LEN", _fn("list_distinct", col("_k"))),
                    expression=exp.func("LEN", col("_k")),
                ),
            )
        ],
        default=exp.false(),
    )
    d = exp.select(
        *[col(c) for c in carried],
        *[col(f"_t{i}") for i in range(n)],
        col("_e"),
        alias(exp.and_(col("_obj"), exp.Not(this=dup)), "_ok"),
        *[col(f"_n{i}") for i in range(n)],
        *[col(f"_a{i}") for i in range(n)],
    ).from_(sub(k, "_k"), copy=False)

    drop_declared = exp.JSONObject(
        expressions=[exp.JSONKeyValue(this=lit(nm), expression=exp.null()) for nm in names]
    )
    undeclared = exp.Case(
        ifs=[
            exp.If(
                this=exp.and_(col("_ok"), col("_e")),
                true=exp.Nullif(
                    this=_fn("json_merge_patch", line.copy(), drop_declared),
                    expression=lit("{}"),
                ),
            )
        ]
    )
    texts = [
        alias(
            exp.Case(
                ifs=[
                    exp.If(
                        this=exp.and_(col("_ok"), exp.Not(this=col(f"_n{i}"))),
                        true=col(f"_t{i}"),
                    )
                ]
            ),
            f"_s{i}",
        )
        for i in range(n)
    ]
    return exp.select(
        *[col(c) for c in [*LINEAGE, *partitions, "_line", "_ok"]],
        *texts,
        # _n and _a of a corrupt line are meaningless: finish() and the drift counts
        # read them only together with _ok / _corrupt
        *[col(f"_n{i}") for i in range(n)],
        *[col(f"_a{i}") for i in range(n)],
        alias(undeclared, "_undeclared"),
    ).from_(sub(d, "_d"), copy=False)


def _sum(terms: list[exp.Expression]) -> exp.Expression:
    total = terms[0]
    for t in terms[1:]:
        total = exp.Add(this=total, expression=t)
    return total


def typed_select(
    lines_table: str,
    source: TableSource,
    partitions: list[str],
    physical: dict[str, str] | None = None,
) -> exp.Select:
    """The typed relation of NDJSON lines loaded as text (``Engine.load_lines``)."""
    text = text_select(lines_table, source, partitions)
    return relation.finish(text, source, partitions, DUCKDB, json_value)


def json_value(i: int, name: str) -> exp.Expression:
    """The original JSON value of field ``name`` (for ``_rescued_data``)."""
    return exp.Anonymous(this="json_extract", expressions=[col("_line"), lit(json_path(name))])
