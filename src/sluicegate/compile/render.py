"""Render sqlglot trees for one dialect, raising on anything the dialect cannot express."""

from __future__ import annotations

from sqlglot import exp
from sqlglot.errors import ErrorLevel

ENGINE_DIALECTS = {"duckdb": "duckdb", "spark": "spark"}


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
    return expression.sql(dialect=dialect, unsupported_level=ErrorLevel.RAISE, pretty=pretty)


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
