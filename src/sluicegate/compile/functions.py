"""The functions contract SQL may call: an allow-list, checked on the parsed tree.

Rules, ``dlq --where`` predicates, marts and model SQL are written by contract authors and
operators, and run inside the engine with the engine's powers. A deny-list lost that race
(Spark's ``reflect``/``java_method`` call Java; DuckDB's ``read_text``, ``read_csv``,
``getenv``, ``current_setting`` read files and settings), so every function node of the
parsed tree — whatever the dialect parsed it to — must be one of :data:`ALLOWED`: pure,
deterministic, portable scalar functions with the same meaning on DuckDB and Spark.
Anything else (including every function sqlglot does not know, an ``Anonymous`` node) is
a located contract error at validate time.

``refused_functions.txt`` lists every other function class sqlglot knows; the test
``tests/unit/test_function_policy.py`` walks sqlglot's function registry for DuckDB and
Spark and fails when a function is in neither list, so a sqlglot upgrade that adds one
forces a decision instead of a silent default.
"""

from __future__ import annotations

from functools import cache
from importlib import resources

from sqlglot import exp

#: Scalar functions a rule may call (sqlglot expression class names).
ALLOWED = frozenset(
    {
        # operators sqlglot models as functions
        "And", "Or", "Xor",
        # numbers
        "Abs", "Ceil", "Floor", "Round", "Trunc", "Sqrt", "Ln", "Log", "Exp", "Pow", "Sign",
        "Least", "Greatest", "IsNan", "IsInf",
        # conditionals and casts
        "Coalesce", "Nullif", "If", "Case", "Cast", "TryCast",
        # text
        "Lower", "Upper", "Initcap", "Length", "Trim", "Substring", "Concat", "ConcatWs",
        "Replace", "StartsWith", "EndsWith", "Contains", "StrPosition", "Left", "Right",
        "Pad", "Reverse", "Repeat", "Levenshtein", "Ascii", "Chr", "Translate",
        "RegexpLike", "RegexpILike", "RegexpExtract", "RegexpReplace",
        # dates and times
        "Year", "Month", "Day", "Quarter", "Hour", "Minute", "Second", "Week", "WeekOfYear",
        "DayOfWeek", "DayOfMonth", "DayOfYear", "Extract", "DateTrunc", "TimestampTrunc",
        "LastDay", "Date", "StrToDate", "StrToTime",
    }
)  # fmt: skip


#: What a mart (a SELECT over published tables) may add: aggregates and ranking windows.
MART_ONLY = frozenset(
    {"Count", "Sum", "Avg", "Min", "Max", "CountIf", "Stddev", "StddevPop", "StddevSamp",
     "Variance", "VariancePop", "Median", "RowNumber", "Rank", "DenseRank", "Lag", "Lead",
     "FirstValue", "LastValue"}
)  # fmt: skip


@cache
def refused() -> frozenset[str]:
    """Function classes deliberately refused (every other one sqlglot knows)."""
    text = resources.files(__package__).joinpath("refused_functions.txt").read_text("utf-8")
    return frozenset(line.strip() for line in text.splitlines() if line.strip())


def disallowed(tree: exp.Expression, allowed: frozenset[str] = ALLOWED) -> exp.Func | None:
    """The first function node of ``tree`` that is not allowed, or None."""
    for node in tree.walk():
        if isinstance(node, exp.Func) and type(node).__name__ not in allowed:
            return node
    return None


def describe(node: exp.Func) -> str:
    """``reflect`` for an unknown function, ``READ_CSV`` for one sqlglot knows."""
    if isinstance(node, exp.Anonymous):
        return str(node.name)
    return node.sql_name()
