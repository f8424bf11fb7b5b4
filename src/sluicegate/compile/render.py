"""Render sqlglot trees for one dialect, raising on anything the dialect cannot express."""

from __future__ import annotations

import os

from sqlglot import exp
from sqlglot.errors import ErrorLevel

ENGINE_DIALECTS = {"duckdb": "duckdb", "spark": "spark"}

#: Dialects rendered without sqlglot's defensive copy of the whole tree. The copy was
#: ~70 % of a render (a DuckDB typed reader: 14 ms with it, 4 ms without; ~50 ms of every
#: watch batch); sqlglot's DuckDB generator changes a tree only for constructs sluicegate
#: does not build (CONNECT BY, sequences, PIVOT, SELECT INTO), and every tree is built for
#: one statement. Spark's generator rewrites CREATE, FROM and tables: it keeps the copy.
UNCOPIED_DIALECTS = frozenset({"duckdb"})
#: Set (to anything) by the test suite: each uncopied render is rendered again from a copy
#: of the tree it left, and a difference (the generator changed the tree) is an error.
VERIFY_ENV = "SLUICEGATE_VERIFY_RENDER"


def render(expression: exp.Expression, dialect: str, *, pretty: bool = False) -> str:
    """Render ``expression`` as SQL text for ``dialect``.

    ``unsupported_level=RAISE`` turns a construct the dialect lacks into an error instead
    of a warning and invalid SQL.

    >>> from sqlglot import exp
    >>> render(exp.select("a").from_("t"), "spark")
    'SELECT a FROM t'
    """
    if dialect == "spark":
        expression = _safe_try_casts(expression)
    uncopied = dialect in UNCOPIED_DIALECTS
    text = expression.sql(
        dialect=dialect, unsupported_level=ErrorLevel.RAISE, pretty=pretty, copy=not uncopied
    )
    if uncopied and os.environ.get(VERIFY_ENV):
        again = expression.sql(dialect=dialect, unsupported_level=ErrorLevel.RAISE, pretty=pretty)
        if again != text:
            raise AssertionError(f"rendering changed the tree: {text[:200]!r} → {again[:200]!r}")
    return text


def _safe_try_casts(expression: exp.Expression) -> exp.Expression:
    """Keep TRY_CAST a TRY_CAST on Spark: sqlglot writes a TryCast without ``safe`` as a
    plain CAST there (lenient without ANSI mode), but sluicegate runs Spark with ANSI on,
    where CAST raises on bad input."""
    if all(t.args.get("safe") for t in expression.find_all(exp.TryCast)):
        return expression
    expression = expression.copy()
    for t in expression.find_all(exp.TryCast):
        t.set("safe", True)
    return expression


def ident(name: str) -> exp.Identifier:
    """A quoted identifier: user column names never collide with keywords."""
    return exp.to_identifier(name, quoted=True)


def col(name: str, table: str | None = None) -> exp.Column:
    """A quoted column reference, optionally qualified by a table alias."""
    return exp.Column(this=ident(name), table=ident(table) if table else None)


def table(name: str, alias: str | None = None) -> exp.Table:
    t = exp.Table(this=ident(name))
    if alias:
        t.set("alias", exp.TableAlias(this=ident(alias)))
    return t


def lit(value: object) -> exp.Expression:
    """A SQL literal for a Python value (None → NULL)."""
    if value is None:
        return exp.null()
    if isinstance(value, bool):
        return exp.true() if value else exp.false()
    if isinstance(value, int | float):
        return exp.Literal.number(value)
    return exp.Literal.string(str(value))


def is_true(e: exp.Expression) -> exp.Expression:
    """``(e) IS TRUE``: FALSE and NULL both fail — the one null semantics of every rule."""
    return exp.Is(this=exp.paren(e, copy=False), expression=exp.true())


def lineage_file(name: str = "_source_file") -> exp.Expression:
    """A lineage path column as text. An engine may hold it as another type while a run
    works (DuckDB: an ``ENUM`` of the bound files, engines/duckdb_inputs.py); the
    published tables always store the path as ``VARCHAR``."""
    return exp.alias_(exp.cast(col(name), "VARCHAR"), ident(name))
