"""CSV lines → the text relation (see read.py), then the same casts as NDJSON.

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
* values are text; the cast rules of ``cast.py`` make them typed.
"""

from __future__ import annotations

from sqlglot import exp

from ..contract.models import CsvOptions, TableSource
from .read import LINEAGE, alias, finish, not_null, sub, with_partitions
from .render import col, ident, lit

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


def fields_expr(text: exp.Expression, opts: CsvOptions) -> exp.Expression:
    """The unquoted field values of a well-formed line, as a list (DuckDB)."""
    if opts.quote:
        # Every field is followed by a delimiter once one is appended; each match then
        # starts at a field's first character (a well-formed line tokenizes one way only),
        # so a delimiter inside quotes is never mistaken for a separator.
        marked = exp.RegexpReplace(
            this=exp.DPipe(this=text.copy(), expression=lit(opts.delimiter)),
            expression=lit(f"({field_re(opts)}){_re_char(opts.delimiter)}"),
            replacement=lit("\\1" + NL),
            modifiers=lit("g"),
        )
        without_last_nl = exp.Substring(
            this=marked,
            start=exp.Literal.number(1),
            length=exp.Sub(this=exp.func("LEN", marked.copy()), expression=exp.Literal.number(1)),
        )
        raw = _fn("string_split", without_last_nl, lit(NL))
    else:
        raw = _fn("string_split", text.copy(), lit(opts.delimiter))
    x = _var("x")
    q = opts.quote
    ifs = []
    if q:
        quoted = exp.and_(
            exp.GTE(this=exp.func("LEN", x.copy()), expression=exp.Literal.number(2)),
            _fn("starts_with", x.copy(), lit(q)),
        )
        inner = exp.Substring(
            this=x.copy(),
            start=exp.Literal.number(2),
            length=exp.Sub(this=exp.func("LEN", x.copy()), expression=exp.Literal.number(2)),
        )
        ifs.append(exp.If(this=quoted, true=_fn("replace", inner, lit(q + q), lit(q))))
    ifs.append(exp.If(this=exp.EQ(this=x.copy(), expression=lit("")), true=exp.null()))
    unquote = exp.Case(ifs=ifs, default=x.copy())
    return _fn("list_transform", raw, _lambda("x", unquote))


def typed_from_csv_lines(
    lines_table: str, source: TableSource, partitions: list[str], dialect: str
) -> exp.Select:
    """The typed relation (read.py) of CSV lines."""
    if dialect == "spark":  # the same decisions with Spark's list functions: csv_spark.py
        from .csv_spark import typed_from_csv_lines_spark

        return typed_from_csv_lines_spark(lines_table, source, partitions)
    if dialect != "duckdb":
        raise NotImplementedError(f"CSV parsing is not compiled for dialect '{dialect}' yet")
    opts = source.csv or CsvOptions()
    return finish(
        text_select(lines_table, source, partitions, opts), source, partitions, dialect, _text_value
    )


def _text_value(i: int, name: str) -> exp.Expression:
    return col(f"_s{i}")


def _well_formed(opts: CsvOptions) -> exp.Expression:
    return exp.and_(
        exp.Not(this=col("_bad_utf8")),
        exp.RegexpLike(this=col("_line"), expression=lit(line_re(opts))),
    )


def header_select(lines_table: str, source: TableSource, opts: CsvOptions) -> exp.Select:
    """One row per file: the header's names, positions of declared columns, undeclared ones."""
    names = list(source.columns)
    declared = exp.Array(expressions=[lit(n) for n in names])
    first = (
        exp.select(col("_source_file"), alias(exp.func("MIN", col("_source_line")), "_hl"))
        .from_(exp.to_table(lines_table))
        .group_by(col("_source_file"))
    )
    wf = _well_formed(opts)
    head_names = exp.Case(
        ifs=[
            exp.If(
                this=wf,
                true=_fn(
                    "list_transform",
                    fields_expr(col("_line"), opts),
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
    undeclared = _fn(
        "list_filter",
        col("_hn"),
        _lambda("x", exp.Not(this=_fn("list_contains", declared, _var("x")))),
    )
    hok = exp.and_(
        not_null(col("_hn")),
        exp.EQ(
            this=exp.func("LEN", _fn("list_distinct", col("_hn"))),
            expression=exp.func("LEN", col("_hn")),
        ),
    )
    return exp.select(
        col("_source_file"),
        col("_hl"),
        alias(exp.func("COALESCE", hok, exp.false()), "_hok"),
        alias(exp.func("LEN", col("_hn")), "_hcount"),
        *[alias(_fn("list_position", col("_hn"), lit(n)), f"_hp{i}") for i, n in enumerate(names)],
        alias(undeclared, "_hu"),
        alias(
            _fn(
                "list_transform",
                undeclared.copy(),
                _lambda("x", _fn("list_position", col("_hn"), _var("x"))),
            ),
            "_hi",
        ),
    ).from_(sub(h, "_h"))


def text_select(
    lines_table: str, source: TableSource, partitions: list[str], opts: CsvOptions
) -> exp.Select:
    """The text relation of CSV lines, DuckDB dialect."""
    names = list(source.columns)
    n = len(names)
    parts = [col(p, "_l") for p in partitions]
    lines = with_partitions(lines_table, partitions, ["_line", "_bad_utf8"], "_l")
    if opts.header:
        head = header_select(lines_table, source, opts)
        base = (
            exp.select(
                *[col(c, "_l") for c in LINEAGE],
                *parts,
                col("_line", "_l"),
                col("_bad_utf8", "_l"),
                col("_hok", "_h"),
                col("_hcount", "_h"),
                *[col(f"_hp{i}", "_h") for i in range(n)],
                col("_hu", "_h"),
                col("_hi", "_h"),
            )
            .from_(lines)
            .join(
                sub(head, "_h"),
                on=exp.EQ(this=col("_source_file", "_l"), expression=col("_source_file", "_h")),
            )
            .where(exp.NEQ(this=col("_source_line", "_l"), expression=col("_hl", "_h")))
        )
    else:
        base = exp.select(
            *[col(c) for c in LINEAGE],
            *parts,
            col("_line"),
            col("_bad_utf8"),
            alias(exp.true(), "_hok"),
            alias(exp.Literal.number(n), "_hcount"),
            *[alias(exp.Literal.number(i + 1), f"_hp{i}") for i in range(n)],
            alias(exp.cast(exp.Array(expressions=[]), "VARCHAR[]"), "_hu"),
            alias(exp.cast(exp.Array(expressions=[]), "INTEGER[]"), "_hi"),
        ).from_(lines)
    carried = [*LINEAGE, *partitions, "_line"]
    wf = _well_formed(opts)
    f = exp.select(
        *[col(c) for c in carried],
        col("_hok"),
        col("_hcount"),
        *[col(f"_hp{i}") for i in range(n)],
        col("_hu"),
        col("_hi"),
        alias(exp.Case(ifs=[exp.If(this=wf, true=fields_expr(col("_line"), opts))]), "_f"),
    ).from_(sub(base, "_b"))
    ok = exp.func(
        "COALESCE",
        exp.and_(col("_hok"), exp.EQ(this=exp.func("LEN", col("_f")), expression=col("_hcount"))),
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

    def field(i: int) -> exp.Expression:
        return exp.Bracket(this=col("_f"), expressions=[col(f"_hp{i}")], offset=1)

    undeclared = exp.Case(
        ifs=[
            exp.If(
                this=exp.and_(
                    col("_ok"),
                    exp.GT(this=exp.func("LEN", col("_hu")), expression=exp.Literal.number(0)),
                ),
                true=exp.cast(
                    _fn(
                        "to_json",
                        exp.Map(
                            keys=col("_hu"),
                            values=_fn(
                                "list_transform",
                                col("_hi"),
                                _lambda(
                                    "i",
                                    exp.Bracket(this=col("_f"), expressions=[_var("i")], offset=1),
                                ),
                            ),
                        ),
                    ),
                    "VARCHAR",
                ),
            )
        ]
    )
    return exp.select(
        *[col(c) for c in carried],
        col("_ok"),
        *[
            alias(exp.Case(ifs=[exp.If(this=col("_ok"), true=field(i))]), f"_s{i}")
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
