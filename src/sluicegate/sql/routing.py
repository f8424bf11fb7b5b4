"""Seed 000: route raw orders to good orders or to the quarantine.

Why one rule list: the good set and the quarantine must be exact complements
(every raw order lands in exactly one of them). Both queries are derived from
:data:`RULES` — the good query keeps rows where every rule passes, the
quarantine keeps rows where ``NOT`` (every rule passes) and names the first
failing rule — so the predicate is written once and the complement holds by
construction. Each rule's *pass* condition is two-valued (never NULL for any
input), so ``NOT`` of it is a true complement even for NULL ``cid``/``amt``.

The customer lookup joins to ``SELECT DISTINCT cid FROM cust``: a customer key
duplicated in the customer table must never multiply an order.
"""

from __future__ import annotations

from typing import NamedTuple

from sqlglot import exp
from sqlglot.dialects.dialect import Dialect

from sluicegate.sql.render import parse_table, render, resolve_dialect

_O = "o"  # alias of the raw orders
_C = "c"  # alias of the distinct customer keys


class Rule(NamedTuple):
    """One data-contract rule: the reason recorded on failure, and when it passes."""

    reason: str
    passes: exp.Condition


def _col(name: str, table: str) -> exp.Column:
    return exp.column(name, table=table)


RULES: tuple[Rule, ...] = (
    Rule("null_customer", _col("cid", _O).is_(exp.null()).not_()),
    Rule(
        "non_positive_amount",
        exp.and_(
            _col("amt", _O).is_(exp.null()).not_(),
            exp.GT(this=_col("amt", _O), expression=exp.Literal.number(0)),
        ),
    ),
    # After the LEFT JOIN, a missing customer shows as a NULL key on the right.
    Rule("unknown_customer", _col("cid", _C).is_(exp.null()).not_()),
)
"""The three rules, in priority order (the first failing one is the reason)."""


def _all_pass() -> exp.Condition:
    """The good predicate: every rule passes (two-valued, see module doc)."""
    return exp.and_(*(exp.paren(rule.passes.copy(), copy=False) for rule in RULES))


def _distinct_customers(cust: str, dialect: str | type[Dialect] | None) -> exp.Subquery:
    customers = parse_table(cust, dialect, alias="k")
    keys = exp.select(_col("cid", "k")).distinct().from_(customers)
    return keys.subquery(_C)


def good_orders_expression(raw: str, cust: str, *, dialect: str | None = None) -> exp.Select:
    """Build the good-orders query as a sqlglot tree (see :func:`good_orders_select`)."""
    target = resolve_dialect(dialect)
    orders = parse_table(raw, target, alias=_O)
    on = exp.EQ(this=_col("cid", _O), expression=_col("cid", _C))
    return (
        exp.select(*(_col(name, _O) for name in ("oid", "cid", "amt", "ots")))
        .from_(orders)
        .join(_distinct_customers(cust, target), on=on, join_type="inner")
        .where(_all_pass())
    )


def quarantine_expression(raw: str, cust: str, *, dialect: str | None = None) -> exp.Select:
    """Build the quarantine query as a sqlglot tree (see :func:`quarantine_select`)."""
    target = resolve_dialect(dialect)
    orders = parse_table(raw, target, alias=_O)
    on = exp.EQ(this=_col("cid", _O), expression=_col("cid", _C))
    reason = exp.Case(
        ifs=[
            exp.If(
                this=exp.not_(exp.paren(rule.passes.copy())), true=exp.Literal.string(rule.reason)
            )
            for rule in RULES
        ]
    )
    return (
        exp.select(_col("oid", _O), exp.alias_(reason, "reason"))
        .from_(orders)
        .join(_distinct_customers(cust, target), on=on, join_type="left")
        .where(exp.not_(exp.paren(_all_pass())))
    )


def good_orders_select(raw: str, cust: str, *, dialect: str | None = None) -> str:
    """SELECT the raw orders that pass every rule of the seed's data contract.

    Rules: ``cid`` is not NULL; ``amt`` is not NULL and > 0; ``cid`` exists in
    the customer table. Columns: ``oid, cid, amt, ots``.

    Args:
        raw: the raw orders table (``tbl``, ``db.tbl`` or ``cat.db.tbl``) with
            columns ``oid, cid, amt, ots``.
        cust: the customers table, with a ``cid`` column (keys may repeat).
        dialect: ``None`` for one body that runs on DuckDB, Spark SQL and
            Flink SQL (batch); or ``"duckdb"``, ``"spark"``, ``"flink"``.

    Returns:
        A SELECT statement (no trailing semicolon).

    Example:
        >>> import duckdb
        >>> con = duckdb.connect()
        >>> _ = con.execute("CREATE TABLE orders_raw AS SELECT * FROM (VALUES (1, 7, 5, 100), "
        ...         "(2, NULL, 5, 100)) t(oid, cid, amt, ots)")
        >>> _ = con.execute("CREATE TABLE customers AS SELECT 7 AS cid")
        >>> con.sql(good_orders_select("orders_raw", "customers")).fetchall()
        [(1, 7, 5, 100)]
        >>> print(good_orders_select("orders_raw", "customers"))
        SELECT o.oid, o.cid, o.amt, o.ots FROM orders_raw AS o INNER JOIN (SELECT DISTINCT k.cid FROM customers AS k) AS c ON o.cid = c.cid WHERE (NOT o.cid IS NULL) AND (NOT o.amt IS NULL AND o.amt > 0) AND (NOT c.cid IS NULL)
    """
    return render(good_orders_expression(raw, cust, dialect=dialect), resolve_dialect(dialect))


def quarantine_select(raw: str, cust: str, *, dialect: str | None = None) -> str:
    """SELECT every raw order that fails a rule, with the first failing rule.

    Columns: ``oid, reason``. ``reason`` is ``null_customer``, then
    ``non_positive_amount``, then ``unknown_customer`` in priority order. The
    WHERE is ``NOT`` of the good predicate, so good + quarantine = raw, with
    disjoint ``oid`` sets.

    Args:
        raw: the raw orders table (``tbl``, ``db.tbl`` or ``cat.db.tbl``).
        cust: the customers table, with a ``cid`` column (keys may repeat).
        dialect: ``None`` for the portable body, or ``"duckdb"``, ``"spark"``,
            ``"flink"``.

    Returns:
        A SELECT statement (no trailing semicolon).

    Example:
        >>> import duckdb
        >>> con = duckdb.connect()
        >>> _ = con.execute("CREATE TABLE orders_raw AS SELECT * FROM (VALUES (1, 7, 5, 100), "
        ...         "(2, NULL, 5, 100), (3, 8, 0, 100)) t(oid, cid, amt, ots)")
        >>> _ = con.execute("CREATE TABLE customers AS SELECT 7 AS cid")
        >>> sorted(con.sql(quarantine_select("orders_raw", "customers")).fetchall())
        [(2, 'null_customer'), (3, 'non_positive_amount')]
    """
    return render(quarantine_expression(raw, cust, dialect=dialect), resolve_dialect(dialect))
