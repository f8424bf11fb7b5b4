"""CSV lines → the text relation (see relation.py), then the same casts as NDJSON.

A CSV record is one physical line (quoted line breaks are not supported: such a record
is split and both halves are corrupt). The rules (docs/contract-reference.md § "CSV"):

* a field is either quoted — ``Q … Q`` with ``QQ`` for a quote inside — or unquoted and
  free of the quote character; a line that is not a sequence of such fields separated by
  the delimiter is a ``corrupt_record`` (strict RFC 4180, per line);
* with ``header: true`` (the default) the first non-blank line of each file names the
  fields: declared columns are found by name (case-sensitive, surrounding spaces of the
  name ignored), header names that are not declared are undeclared fields (rescued,
  reported as drift), declared names missing from the header are absent (NULL, drift).
  A header that is malformed or repeats a name makes every record of its file corrupt;
* every record must have as many fields as its header (or as declared columns without a
  header), else it is a ``corrupt_record``;
* an empty unquoted field is NULL; a quoted empty field ``""`` is the empty string;
* values are text; the cast rules of ``compile/cast.py`` make them typed.

The relation is built once, here, for every dialect; only the list functions differ
(``ListFunctions``): DuckDB's are in ``csv_duckdb.py``, Spark's in ``csv_spark.py``.
"""

from __future__ import annotations

from typing import Protocol

from sqlglot import exp

from ...contract.models import CsvOptions, TableSource
from ..render import col, ident, lit
from . import relation
from .relation import LINEAGE, ReaderDialect, alias, not_null, sub, with_partitions

NL = "\n"  # never inside a line: the field separator after splitting


def _re_char(ch: str) -> str:
    """A regex escape for one character, valid in and out of classes (RE2 and Java)."""
    return "\\x{" + format(ord(ch), "x") + "}"


def field_re(opts: CsvOptions) -> str:
    d = _re_char(opts.delimiter)
    if not opts.quote:
        return f"[^{d}]*"
    q = _re_char(opts.quote)
    return f"(?:{q}(?:[^{q}]|{q}{q})*{q}|[^{d}{q}]*)"


def line_re(opts: CsvOptions) -> str:
    """A well-formed line: fields separated by the delimiter, nothing else."""
    f = field_re(opts)
    return f"^{f}(?:{_re_char(opts.delimiter)}{f})*\\z"


def _fn(name: str, *args: exp.Expression) -> exp.Anonymous:
    return exp.Anonymous(this=name, expressions=list(args))


def _lambda(var: str, body: exp.Expression) -> exp.Lambda:
    return exp.Lambda(this=body, expressions=[exp.to_identifier(var)])


def _var(name: str) -> exp.Column:
    return exp.Column(this=exp.to_identifier(name))


class ListFunctions(Protocol):
    """What a dialect must say for the CSV relation: its string and list functions.

    Positions are 1-based; a missing element or position is NULL, never an error.
    """

    dialect: str
    text_array: str  # the type of an empty list of strings
    int_array: str  # the type of an empty list of positions

    def concat(self, a: exp.Expression, b: exp.Expression) -> exp.Expression: ...

    def replace_all(self, text: exp.Expression, pattern: str, group1_then: str) -> exp.Expression:
        """Every match of ``pattern`` replaced by its first group followed by ``group1_then``."""
        ...

    def split(self, text: exp.Expression, sep: str) -> exp.Expression:
        """``text`` split at every occurrence of the character ``sep``."""
        ...

    def starts_with(self, text: exp.Expression, prefix: exp.Expression) -> exp.Expression: ...

    def replace(
        self, text: exp.Expression, old: exp.Expression, new: exp.Expression
    ) -> exp.Expression: ...

    def transform(self, arr: exp.Expression, fn: exp.Lambda) -> exp.Expression: ...

    def filter(self, arr: exp.Expression, fn: exp.Lambda) -> exp.Expression: ...

    def contains(self, arr: exp.Expression, value: exp.Expression) -> exp.Expression: ...

    def size(self, arr: exp.Expression) -> exp.Expression: ...

    def distinct(self, arr: exp.Expression) -> exp.Expression: ...

    def position(self, arr: exp.Expression, value: exp.Expression) -> exp.Expression: ...

    def at(self, arr: exp.Expression, i: exp.Expression) -> exp.Expression: ...

    def json_object(self, keys: exp.Expression, values: exp.Expression) -> exp.Expression:
        """A JSON object text of two parallel lists."""
        ...


def fields_expr(text: exp.Expression, opts: CsvOptions, fns: ListFunctions) -> exp.Expression:
    """The unquoted field values of a well-formed line, as a list."""
    if opts.quote:
        # Every field is followed by a delimiter once one is appended; each match then
        # starts at a field's first character (a well-formed line tokenizes one way only),
        # so a delimiter inside quotes is never mistaken for a separator.
        marked = fns.replace_all(
            fns.concat(text.copy(), lit(opts.delimiter)),
            f"({field_re(opts)}){_re_char(opts.delimiter)}",
            NL,
        )
        without_last_nl = exp.Substring(
            this=marked,
            start=exp.Literal.number(1),
            length=exp.Sub(this=exp.Length(this=marked.copy()), expression=exp.Literal.number(1)),
        )
        raw = fns.split(without_last_nl, NL)
    else:
        raw = fns.split(text.copy(), opts.delimiter)
    x = _var("x")
    q = opts.quote
    ifs = []
    if q:
        quoted = exp.and_(
            exp.GTE(this=exp.Length(this=x.copy()), expression=exp.Literal.number(2)),
            fns.starts_with(x.copy(), lit(q)),
        )
        inner = exp.Substring(
            this=x.copy(),
            start=exp.Literal.number(2),
            length=exp.Sub(this=exp.Length(this=x.copy()), expression=exp.Literal.number(2)),
        )
        ifs.append(exp.If(this=quoted, true=fns.replace(inner, lit(q + q), lit(q))))
    ifs.append(exp.If(this=exp.EQ(this=x.copy(), expression=lit("")), true=exp.null()))
    unquote = exp.Case(ifs=ifs, default=x.copy())
    return fns.transform(raw, _lambda("x", unquote))


def typed_select(
    lines_table: str,
    source: TableSource,
    partitions: list[str],
    dialect: ReaderDialect,
    fns: ListFunctions,
) -> exp.Select:
    """The typed relation (relation.py) of CSV lines, with ``dialect``'s list functions."""
    opts = source.csv or CsvOptions()
    return relation.finish(
        text_select(lines_table, source, partitions, opts, fns),
        source,
        partitions,
        dialect,
        _text_value,  # on Spark too: rescued as a JSON string (spark_json.json_of)
    )


def _text_value(i: int, name: str) -> exp.Expression:
    return col(f"_s{i}")


def _well_formed(opts: CsvOptions) -> exp.Expression:
    return exp.and_(
        exp.Not(this=col("_bad_utf8")),
        exp.RegexpLike(this=col("_line"), expression=lit(line_re(opts))),
    )


def header_select(
    lines_table: str, source: TableSource, opts: CsvOptions, fns: ListFunctions
) -> exp.Select:
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
                true=fns.transform(
                    fields_expr(col("_line"), opts, fns),
                    _lambda("x", exp.Trim(this=exp.func("COALESCE", _var("x"), lit("")))),
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
    undeclared = fns.filter(
        col("_hn"), _lambda("x", exp.Not(this=fns.contains(declared, _var("x"))))
    )
    hok = exp.and_(
        not_null(col("_hn")),
        exp.EQ(this=fns.size(fns.distinct(col("_hn"))), expression=fns.size(col("_hn"))),
    )
    return exp.select(
        col("_source_file"),
        col("_hl"),
        alias(exp.func("COALESCE", hok, exp.false()), "_hok"),
        alias(fns.size(col("_hn")), "_hcount"),
        *[alias(fns.position(col("_hn"), lit(n)), f"_hp{i}") for i, n in enumerate(names)],
        alias(undeclared, "_hu"),
        alias(
            fns.transform(undeclared.copy(), _lambda("x", fns.position(col("_hn"), _var("x")))),
            "_hi",
        ),
    ).from_(sub(h, "_h"))


def text_select(
    lines_table: str,
    source: TableSource,
    partitions: list[str],
    opts: CsvOptions,
    fns: ListFunctions,
) -> exp.Select:
    """The text relation of CSV lines."""
    names = list(source.columns)
    n = len(names)
    lines = with_partitions(
        lines_table, partitions, ["_line", "_bad_utf8"], "_l", dialect=fns.dialect
    )
    read = [col(c, "_l") for c in [*LINEAGE, *partitions, "_line", "_bad_utf8"]]
    header = ["_hok", "_hcount", *[f"_hp{i}" for i in range(n)], "_hu", "_hi"]
    if opts.header:
        head = header_select(lines_table, source, opts, fns)
        base = (
            exp.select(*read, *[col(c, "_h") for c in header])
            .from_(lines)
            .join(
                sub(head, "_h"),
                on=exp.EQ(this=col("_source_file", "_l"), expression=col("_source_file", "_h")),
            )
            .where(exp.NEQ(this=col("_source_line", "_l"), expression=col("_hl", "_h")))
        )
    else:  # the declared columns, in order
        base = exp.select(
            *read,
            alias(exp.true(), "_hok"),
            alias(exp.Literal.number(n), "_hcount"),
            *[alias(exp.Literal.number(i + 1), f"_hp{i}") for i in range(n)],
            alias(exp.cast(exp.Array(expressions=[]), fns.text_array), "_hu"),
            alias(exp.cast(exp.Array(expressions=[]), fns.int_array), "_hi"),
        ).from_(lines)
    carried = [*LINEAGE, *partitions, "_line"]
    fields = fields_expr(col("_line"), opts, fns)
    f = exp.select(
        *[col(c) for c in carried],
        col("_hok"),
        col("_hcount"),
        *[col(f"_hp{i}") for i in range(n)],
        col("_hu"),
        col("_hi"),
        alias(exp.Case(ifs=[exp.If(this=_well_formed(opts), true=fields)]), "_f"),
    ).from_(sub(base, "_b"))
    ok = exp.func(
        "COALESCE",
        exp.and_(col("_hok"), exp.EQ(this=fns.size(col("_f")), expression=col("_hcount"))),
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

    values = fns.transform(col("_hi"), _lambda("i", fns.at(col("_f"), _var("i"))))
    has_undeclared = exp.and_(
        col("_ok"), exp.GT(this=fns.size(col("_hu")), expression=exp.Literal.number(0))
    )
    undeclared = exp.Case(
        ifs=[exp.If(this=has_undeclared, true=fns.json_object(col("_hu"), values))]
    )
    return exp.select(
        *[col(c) for c in carried],
        col("_ok"),
        *[
            alias(
                exp.Case(ifs=[exp.If(this=col("_ok"), true=fns.at(col("_f"), col(f"_hp{i}")))]),
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
