"""Name parsing and rendering shared by the seed helpers.

Why a module of its own: every helper must treat table names and dialects the
same way. Names may be qualified (``cat.db.tbl``) and must never be pasted into
SQL text, so they are parsed into sqlglot ``Table`` nodes. Rendering has two
modes:

* ``dialect=None`` gives the *portable body*: one text that DuckDB, Spark SQL
  and Flink SQL all run unchanged. Quoting cannot be portable (DuckDB quotes
  with ``"``, Spark and Flink with backticks), so a portable body contains no
  quoted name; a table name that would need quoting is refused with a hint to
  pass ``dialect=``.
* ``dialect="duckdb" | "spark" | "flink"`` quotes every identifier in that
  engine's style, so reserved words and odd characters in names are safe.

Both render with ``unsupported_level=ErrorLevel.RAISE``: a construct the target
cannot express is an error, not a warning.
"""

from __future__ import annotations

import difflib
import re

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect
from sqlglot.errors import ErrorLevel, ParseError
from sqlglot.generators.duckdb import DuckDBGenerator

from sluicegate.sql.flink_dialect import FLINK_RESERVED_WORDS, Flink

ENGINES: tuple[str, ...] = ("duckdb", "spark", "flink")
"""The engines the helpers are rendered for and tested on."""

_PLAIN_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")

# A portable name must be usable unquoted on every engine. Spark reserves no
# words unless spark.sql.ansi.enforceReservedKeywords is set, so DuckDB's and
# Flink's lists cover it in practice.
_RESERVED_SOMEWHERE: frozenset[str] = FLINK_RESERVED_WORDS | frozenset(
    DuckDBGenerator.RESERVED_KEYWORDS
)


def resolve_dialect(dialect: str | None) -> str | type[Dialect] | None:
    """Check a ``dialect=`` argument and return what sqlglot should receive.

    Args:
        dialect: ``None`` for the portable body, or one of :data:`ENGINES`
            (case-insensitive).

    Returns:
        ``None``, a sqlglot dialect name, or the :class:`Flink` dialect class.

    Raises:
        ValueError: for any other name, suggesting the closest engine.

    Example:
        >>> resolve_dialect("DuckDB")
        'duckdb'
        >>> resolve_dialect("sprak")
        Traceback (most recent call last):
        ...
        ValueError: unknown dialect 'sprak'; expected one of duckdb, spark, flink. Did you mean 'spark'?
    """
    if dialect is None:
        return None
    name = dialect.strip().lower()
    if name not in ENGINES:
        close = difflib.get_close_matches(name, ENGINES, n=1)
        hint = f" Did you mean {close[0]!r}?" if close else ""
        raise ValueError(
            f"unknown dialect {dialect!r}; expected one of {', '.join(ENGINES)}.{hint}"
        )
    return Flink if name == "flink" else name


def parse_table(name: str, dialect: str | type[Dialect] | None, *, alias: str) -> exp.Table:
    """Parse a possibly qualified table name into an aliased ``Table`` node.

    Why: a name is data, not SQL. ``exp.to_table`` splits ``cat.db.tbl`` into
    identifiers (quoted per the target dialect's rules), so a hostile or odd
    name can never change the query's shape.

    Args:
        name: ``tbl``, ``db.tbl`` or ``cat.db.tbl``; parts may be quoted in the
            target dialect's style.
        dialect: the resolved target (see :func:`resolve_dialect`); ``None``
            means portable, which admits only plain, unreserved names.
        alias: the alias the helper's SQL refers to the table by.

    Returns:
        The table node, aliased.

    Raises:
        ValueError: if the name is empty, not a table name, or (portable mode)
            needs quoting on some engine.

    Example:
        >>> parse_table("cat.db.orders_raw", None, alias="o").sql()
        'cat.db.orders_raw AS o'
    """
    if not isinstance(name, str) or not name.strip():
        raise ValueError(f"table name must be a non-empty string, got {name!r}")
    try:
        table = exp.to_table(name.strip(), dialect=dialect or Flink)
    except ParseError as err:
        raise ValueError(f"cannot parse table name {name!r}: {err}") from err
    parts = [table.args.get(key) for key in ("catalog", "db", "this")]
    parts = [part for part in parts if part is not None]
    if not parts or not all(isinstance(part, exp.Identifier) for part in parts):
        raise ValueError(f"{name!r} is not a table name (expected tbl, db.tbl or cat.db.tbl)")
    if dialect is None:
        for part in parts:
            _require_portable(part, name)
            part.set("quoted", False)  # `orders` and orders are the same plain name
    return exp.alias_(table, alias, table=True)


def _require_portable(part: exp.Identifier, name: str) -> None:
    """Refuse a name part that no single unquoted spelling serves everywhere."""
    text = part.name
    if not _PLAIN_NAME.fullmatch(text) or text.lower() in _RESERVED_SOMEWHERE:
        raise ValueError(
            f"table name {name!r}: {text!r} needs quoting on at least one engine, "
            "and quoting differs between engines, so there is no portable spelling. "
            "Pass dialect='duckdb', 'spark' or 'flink' to get a quoted rendering."
        )


def render(tree: exp.Expression, dialect: str | type[Dialect] | None) -> str:
    """Render a helper's expression tree, raising on anything unsupported.

    Args:
        tree: the query built by a helper.
        dialect: the resolved target; ``None`` renders the portable body with
            the Flink generator (the strictest of the three) and no quoting.

    Returns:
        One SQL SELECT statement, without a trailing semicolon.

    Example:
        >>> from sqlglot import exp
        >>> render(exp.select("x").from_("t"), "spark")
        'SELECT `x` FROM `t`'
    """
    if dialect is None:
        return tree.sql(dialect=Flink, identify=False, unsupported_level=ErrorLevel.RAISE)
    return tree.sql(dialect=dialect, identify=True, unsupported_level=ErrorLevel.RAISE)
