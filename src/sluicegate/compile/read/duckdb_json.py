"""DuckDB's JSON pieces of the readers: ``json_object`` and RFC 7396 ``json_merge_patch``.

The :data:`DUCKDB` reader dialect the format modules receive (relation.ReaderDialect);
Spark's counterpart, built from strings, is spark_json.py.
"""

from __future__ import annotations

from sqlglot import exp

from ..render import col, lit
from .relation import ReaderDialect


def rescued_json(fields: list[tuple[str, exp.Expression, exp.Expression]]) -> exp.Expression:
    """``_undeclared`` merged with ``{name: value}`` of every field whose flag is TRUE."""
    pairs = exp.JSONObject(
        expressions=[
            exp.JSONKeyValue(
                this=lit(name), expression=exp.Case(ifs=[exp.If(this=flag, true=value)])
            )
            for name, flag, value in fields
        ]
    )
    # RFC 7396 merge patch: a NULL value in the patch drops the key, so only flagged fields stay.
    return exp.Anonymous(
        this="json_merge_patch",
        expressions=[exp.func("COALESCE", col("_undeclared"), lit("{}")), pairs],
    )


def json_object_text(pairs: list[tuple[str, exp.Expression]]) -> exp.Expression:
    """``{name: value, …}`` of the non-NULL values (Parquet's undeclared columns)."""
    obj = exp.JSONObject(
        expressions=[exp.JSONKeyValue(this=lit(name), expression=value) for name, value in pairs]
    )
    # merge into {}: NULL values drop out (RFC 7396), so only present values are rescued
    return exp.Anonymous(this="json_merge_patch", expressions=[lit("{}"), obj])


DUCKDB = ReaderDialect("duckdb", rescued_json, json_object_text)
