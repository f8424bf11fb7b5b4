"""Raw records → typed rows with built-in outcome flags (stage 2: read permissively).

Engines load records with lineage (``_source_file``, ``_source_line``); the format modules
of this package (``ndjson_duckdb``/``ndjson_spark``, ``csv_text``, ``parquet``) turn each
record into a *text relation*, and :func:`finish` turns that into the typed relation with
one set of cast and flag rules for every format. The few JSON functions that differ by
dialect come in as a :class:`ReaderDialect` (``duckdb_json.DUCKDB``, ``spark_json.SPARK``),
so this module imports no dialect module; ``table.py`` pairs formats with dialects. Every record yields exactly one output row, whatever it
contains, so the ledger can never lose one here.

The text relation (internal to the readers):

* lineage, partition columns; ``_line`` (the record's text, for ``_raw``)
* ``_ok`` — the record is well formed (a JSON object / a CSV line of the right shape)
* ``_s<i>`` — the text of declared column i (NULL when absent, null or not a scalar)
* ``_n<i>`` — the value of column i is an object or array (a mismatch for any type)
* ``_a<i>`` — column i is absent from the record (drift: declared fields never present)
* ``_undeclared`` — JSON object of the record's undeclared fields (NULL when none)

Output columns of every reader (``table.typed_select``) (the typed relation; stable — the router, the
metrics and the Spark reader rely on them):

* lineage: ``_source_file``, ``_source_line``; partition columns (VARCHAR)
* every declared column, cast to its declared type (NULL when absent or not castable)
* ``_corrupt`` — not a well-formed record; ``_raw`` — the line text when corrupt
* ``_mismatch`` — some present value did not cast; ``_x<i>`` per declared column
* ``_a<i>`` — the key of declared column i is absent from the record
* ``_undeclared`` — JSON object of undeclared fields (NULL when none)
* ``_rescued_data`` — JSON object of undeclared fields + original values of mismatched
  fields (NULL when neither)
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from sqlglot import exp

from ...contract.models import TableSource
from ..cast import cast_text
from ..render import col, ident, lit

LINEAGE = ["_source_file", "_source_line"]
HIVE_NULL = "__HIVE_DEFAULT_PARTITION__"

#: ``(name, flag, value)`` of each declared column → the ``_rescued_data`` JSON text
RescuedJson = Callable[[list[tuple[str, exp.Expression, exp.Expression]]], exp.Expression]
#: ``(name, value)`` pairs → a JSON object text of the non-NULL values
JsonObjectText = Callable[[list[tuple[str, exp.Expression]]], exp.Expression]


@dataclass(frozen=True)
class ReaderDialect:
    """The JSON pieces a reader needs that a SQL dialect spells differently.

    DuckDB has ``json_object`` and ``json_merge_patch``; Spark builds the same text from
    strings (spark_json.py). Everything else in a reader is the same tree for both.
    """

    name: str  # the sqlglot dialect
    rescued_json: RescuedJson
    json_object_text: JsonObjectText


def json_path(name: str) -> str:
    """``$."name"``: a JSON path that names one top-level key exactly."""
    return '$."' + name.replace("\\", "\\\\").replace('"', '\\"') + '"'


def alias(e: exp.Expression, name: str) -> exp.Alias:
    return exp.alias_(e, ident(name), copy=False)


def sub(select: exp.Select, name: str) -> exp.Subquery:
    """``(select) AS name``."""
    return exp.Subquery(this=select, alias=exp.TableAlias(this=ident(name)))


def not_null(e: exp.Expression) -> exp.Expression:
    return exp.Not(this=exp.Is(this=e, expression=exp.null()))


def partition_expr(name: str) -> exp.Expression:
    """Value of the outermost Hive folder ``name=value`` in ``_source_file``.

    The folder text as it appears in the path (no URL decoding); an empty value and
    ``__HIVE_DEFAULT_PARTITION__`` are NULL; a file outside such a folder gives NULL.
    """
    pattern = f"[/\\\\]{name}=([^/\\\\]*)[/\\\\]"
    extracted = exp.RegexpExtract(this=col("_source_file"), expression=lit(pattern), group=lit(1))
    empty = exp.Nullif(this=extracted, expression=lit(""))
    return exp.Nullif(this=empty, expression=lit(HIVE_NULL))


def with_partitions(
    table: str,
    partitions: list[str],
    columns: list[str],
    name: str = "_lp",
    dialect: str = "duckdb",
) -> exp.Expression:
    """``table``'s lineage and ``columns`` plus the partition columns, as a FROM item.

    Partition values are computed once per file and joined back on ``_source_file``: a
    regex per row costs ~0.3 s of CPU per 1M rows. On DuckDB the per-file relation is a
    MATERIALIZED CTE, else the optimizer pulls the regex above the join again.
    """
    if not partitions:
        return exp.Table(this=ident(table), alias=exp.TableAlias(this=ident(name)))
    files = exp.select(col("_source_file")).distinct().from_(exp.to_table(table))
    per_file = exp.select(
        alias(col("_source_file"), "_pf"), *[alias(partition_expr(p), p) for p in partitions]
    ).from_(sub(files, "_files"))
    duckdb = dialect == "duckdb"
    joined = (
        exp.select(
            *[col(c, "_l") for c in [*LINEAGE, *columns]], *[col(p, "_p") for p in partitions]
        )
        .from_(exp.Table(this=ident(table), alias=exp.TableAlias(this=ident("_l"))))
        .join(
            exp.Table(this=ident("_p")) if duckdb else sub(per_file, "_p"),
            on=exp.EQ(this=col("_source_file", "_l"), expression=col("_pf", "_p")),
        )
    )
    if duckdb:
        joined = joined.with_(exp.TableAlias(this=ident("_p")), as_=per_file, materialized=True)
    return sub(joined, name)


RescueValue = Callable[[int, str], exp.Expression]


def finish(
    text: exp.Select,
    source: TableSource,
    partitions: list[str],
    dialect: ReaderDialect,
    rescue_value: RescueValue,
    *,
    typed: list[exp.Expression] | None = None,
    extra: list[str] | None = None,
) -> exp.Select:
    """Text relation → typed relation: casts, mismatch flags, ``_raw``, ``_rescued_data``.

    ``rescue_value(i, name)`` is the value kept in ``_rescued_data`` for a mismatched
    column (the original JSON value for NDJSON, the text for CSV, the value for Parquet);
    it is evaluated only on rows with a mismatch. ``typed`` replaces the text cast of
    each column (Parquet casts typed values directly); ``extra`` names more columns of
    the text relation that ``typed`` and ``rescue_value`` use.
    """
    names = list(source.columns)
    specs = list(source.columns.values())
    carried = [*LINEAGE, *partitions, "_line", "_ok", "_undeclared", *(extra or [])]
    n = len(names)
    values = typed or [cast_text(col(f"_s{i}"), spec, dialect.name) for i, spec in enumerate(specs)]
    casts = [alias(v, name) for v, name in zip(values, names, strict=True)]
    c = exp.select(
        *[col(x) for x in carried],
        *[col(f"_s{i}") for i in range(n)],
        *[col(f"_n{i}") for i in range(n)],
        *[col(f"_a{i}") for i in range(n)],
        *casts,
    ).from_(sub(text, "_t"), copy=False)

    mism = [
        exp.and_(
            col("_ok"),
            exp.paren(
                exp.or_(
                    col(f"_n{i}"),
                    exp.and_(not_null(col(f"_s{i}")), exp.Is(this=col(nm), expression=exp.null())),
                )
            ),
        )
        for i, nm in enumerate(names)
    ]
    texts = [col(f"_s{i}") for i in range(n)]  # kept for rescue_value (CSV, Parquet)
    x = exp.select(
        *[col(x) for x in carried],
        *texts,
        *[col(nm) for nm in names],
        *[alias(m, f"_x{i}") for i, m in enumerate(mism)],
        *[
            alias(exp.func("COALESCE", exp.and_(col("_ok"), col(f"_a{i}")), exp.false()), f"_a{i}")
            for i in range(n)
        ],
    ).from_(sub(c, "_c"), copy=False)

    any_mism = exp.or_(*[col(f"_x{i}") for i in range(n)])
    rescued = dialect.rescued_json(
        [(nm, col(f"_x{i}"), rescue_value(i, nm)) for i, nm in enumerate(names)]
    )
    has_rescue = exp.or_(not_null(col("_undeclared")), col("_mismatch"))
    m = exp.select(
        *[col(x) for x in carried],
        *[t.copy() for t in texts],
        *[col(nm) for nm in names],
        alias(exp.paren(any_mism), "_mismatch"),
        *[col(f"_x{i}") for i in range(n)],
        *[col(f"_a{i}") for i in range(n)],
    ).from_(sub(x, "_x"), copy=False)
    return exp.select(
        *[col(c_) for c_ in LINEAGE],
        *[col(p) for p in partitions],
        *[col(nm) for nm in names],
        alias(exp.Not(this=col("_ok")), "_corrupt"),
        alias(exp.Case(ifs=[exp.If(this=exp.Not(this=col("_ok")), true=col("_line"))]), "_raw"),
        col("_mismatch"),
        *[col(f"_x{i}") for i in range(n)],
        *[col(f"_a{i}") for i in range(n)],
        col("_undeclared"),
        alias(exp.Case(ifs=[exp.If(this=has_rescue, true=rescued)]), "_rescued_data"),
    ).from_(sub(m, "_m"), copy=False)
