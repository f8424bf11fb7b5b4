"""Spark's list functions for the CSV relation ``csv_text.py`` builds, and its CSV reader.

The decisions are ``csv_text.py``'s (docs/contract-reference.md §6) and so are the regular
expressions (``field_re``, ``line_re``: the common subset of RE2 and java.util.regex);
only the list functions differ, each replaced by its Spark built-in:

==========================  =================================================
DuckDB                      Spark
==========================  =================================================
``string_split(s, sep)``    ``split(s, regex)`` (the separator escaped)
``list_transform``/filter   ``transform`` / ``filter``
``list_position`` (NULL     ``array_position`` (0 when missing: turned to NULL)
when missing)
``regexp_replace(…, '\\1',  ``regexp_replace(…, '$1')`` (always global)
'g')``
``to_json(MAP(k, v))``      ``to_json(map_from_arrays(k, v))``
==========================  =================================================

:func:`typed_select` is ``csv_text.typed_select`` with these (``csv_text.ListFunctions``).
"""

from __future__ import annotations

from sqlglot import exp

from ...contract.models import TableSource
from ..render import lit
from . import csv_text
from .csv_text import NL, _fn, _re_char
from .spark_json import SPARK


class SparkLists:
    """Spark SQL's list functions (see ``csv_text.ListFunctions``)."""

    dialect = "spark"
    text_array = "ARRAY<STRING>"
    int_array = "ARRAY<INT>"

    def concat(self, a: exp.Expression, b: exp.Expression) -> exp.Expression:
        return exp.Concat(expressions=[a, b])

    def replace_all(self, text: exp.Expression, pattern: str, group1_then: str) -> exp.Expression:
        return exp.RegexpReplace(
            this=text, expression=lit(pattern), replacement=lit("$1" + group1_then)
        )

    def split(self, text: exp.Expression, sep: str) -> exp.Expression:
        # split() takes a regex: a delimiter is escaped, the newline stands for itself
        pattern = sep if sep == NL else _re_char(sep)
        return exp.Split(this=text, expression=lit(pattern), limit=exp.Literal.number(-1))

    def starts_with(self, text: exp.Expression, prefix: exp.Expression) -> exp.Expression:
        return _fn("STARTSWITH", text, prefix)

    def replace(
        self, text: exp.Expression, old: exp.Expression, new: exp.Expression
    ) -> exp.Expression:
        return _fn("REPLACE", text, old, new)

    def transform(self, arr: exp.Expression, fn: exp.Lambda) -> exp.Expression:
        return exp.Transform(this=arr, expression=fn)

    def filter(self, arr: exp.Expression, fn: exp.Lambda) -> exp.Expression:
        return exp.ArrayFilter(this=arr, expression=fn)

    def contains(self, arr: exp.Expression, value: exp.Expression) -> exp.Expression:
        return exp.ArrayContains(this=arr, expression=value)

    def size(self, arr: exp.Expression) -> exp.Expression:
        return _fn("SIZE", arr)

    def distinct(self, arr: exp.Expression) -> exp.Expression:
        return _fn("ARRAY_DISTINCT", arr)

    def position(self, arr: exp.Expression, value: exp.Expression) -> exp.Expression:
        """``array_position`` says 0 when missing: NULL instead; an INT, as
        ``element_at`` wants."""
        found = exp.Nullif(this=_fn("ARRAY_POSITION", arr, value), expression=exp.Literal.number(0))
        return exp.Cast(this=found, to=exp.DataType.build("INT"))

    def at(self, arr: exp.Expression, i: exp.Expression) -> exp.Expression:
        """``try_element_at``: NULL for a NULL index, never raises."""
        return _fn("TRY_ELEMENT_AT", arr, i)

    def json_object(self, keys: exp.Expression, values: exp.Expression) -> exp.Expression:
        return _fn("TO_JSON", _fn("MAP_FROM_ARRAYS", keys, values))


def typed_select(
    lines_table: str,
    source: TableSource,
    partitions: list[str],
    physical: dict[str, str] | None = None,
) -> exp.Select:
    """The typed relation of CSV lines on Spark."""
    return csv_text.typed_select(lines_table, source, partitions, SPARK, SparkLists())
