"""DuckDB's list functions for the CSV relation ``csv_text.py`` builds, and its CSV reader."""

from __future__ import annotations

from sqlglot import exp

from ...contract.models import TableSource
from ..render import lit
from . import csv_text
from .csv_text import _fn
from .duckdb_json import DUCKDB


class DuckDBLists:
    """DuckDB's list functions (see ``ListFunctions``)."""

    dialect = "duckdb"
    text_array = "VARCHAR[]"
    int_array = "INTEGER[]"

    def concat(self, a: exp.Expression, b: exp.Expression) -> exp.Expression:
        return exp.DPipe(this=a, expression=b)

    def replace_all(self, text: exp.Expression, pattern: str, group1_then: str) -> exp.Expression:
        return exp.RegexpReplace(
            this=text,
            expression=lit(pattern),
            replacement=lit("\\1" + group1_then),
            modifiers=lit("g"),
        )

    def split(self, text: exp.Expression, sep: str) -> exp.Expression:
        return _fn("string_split", text, lit(sep))

    def starts_with(self, text: exp.Expression, prefix: exp.Expression) -> exp.Expression:
        return _fn("starts_with", text, prefix)

    def replace(
        self, text: exp.Expression, old: exp.Expression, new: exp.Expression
    ) -> exp.Expression:
        return _fn("replace", text, old, new)

    def transform(self, arr: exp.Expression, fn: exp.Lambda) -> exp.Expression:
        return _fn("list_transform", arr, fn)

    def filter(self, arr: exp.Expression, fn: exp.Lambda) -> exp.Expression:
        return _fn("list_filter", arr, fn)

    def contains(self, arr: exp.Expression, value: exp.Expression) -> exp.Expression:
        return _fn("list_contains", arr, value)

    def size(self, arr: exp.Expression) -> exp.Expression:
        return exp.func("LEN", arr)

    def distinct(self, arr: exp.Expression) -> exp.Expression:
        return _fn("list_distinct", arr)

    def position(self, arr: exp.Expression, value: exp.Expression) -> exp.Expression:
        return _fn("list_position", arr, value)

    def at(self, arr: exp.Expression, i: exp.Expression) -> exp.Expression:
        return exp.Bracket(this=arr, expressions=[i], offset=1)

    def json_object(self, keys: exp.Expression, values: exp.Expression) -> exp.Expression:
        return exp.cast(_fn("to_json", exp.Map(keys=keys, values=values)), "VARCHAR")


def typed_select(
    lines_table: str,
    source: TableSource,
    partitions: list[str],
    physical: dict[str, str] | None = None,
) -> exp.Select:
    """The typed relation of CSV lines on DuckDB."""
    return csv_text.typed_select(lines_table, source, partitions, DUCKDB, DuckDBLists())
