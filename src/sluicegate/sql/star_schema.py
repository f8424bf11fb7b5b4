"""Seed 003: an SCD2 dimension from a CDC changelog, and the as-of fact join.

Why these shapes: each change row of a customer opens a version that stays
valid until the next change of the same customer (``LEAD(eff)``); the newest
version stays open until :data:`SENTINEL`. Intervals are half-open,
``[valid_from, valid_to)``, so consecutive versions meet without overlapping:
an order placed exactly at a change belongs to the new version, and an order
before a customer's first change belongs to none. The fact join uses that
interval, never ``is_current`` (which would value history at today's tier).

Two change rows of one customer with the same ``eff`` are out of contract: the
order between them is undefined on every engine, so which of them becomes the
(zero-length) earlier version is too. Rows with a NULL ``eff`` are sorted first
on every engine (the rendered SQL says ``NULLS FIRST``) and never match an
order; quarantine them upstream.
"""

from __future__ import annotations

from sqlglot import exp

from sluicegate.sql.render import parse_table, render, resolve_dialect

SENTINEL = 9223372036854775807
"""Far-future ``valid_to`` of the open (current) version: the largest BIGINT."""

_S = "s"  # alias of the changelog
_V = "v"  # alias of the versioned changelog (inner query)
_O = "o"  # alias of the orders
_D = "d"  # alias of the dimension


def _col(name: str, table: str) -> exp.Column:
    return exp.column(name, table=table)


def _sentinel() -> exp.Literal:
    return exp.Literal.number(SENTINEL)


def dim_scd2_expression(src: str, *, dialect: str | None = None) -> exp.Select:
    """Build the SCD2 dimension query as a sqlglot tree (see :func:`dim_scd2_select`)."""
    target = resolve_dialect(dialect)
    changes = parse_table(src, target, alias=_S)
    next_eff = exp.Window(
        this=exp.Lead(this=_col("eff", _S)),
        partition_by=[_col("cid", _S)],
        order=exp.Order(expressions=[exp.Ordered(this=_col("eff", _S), nulls_first=True)]),
    )
    versions = exp.select(
        _col("cid", _S),
        _col("name", _S),
        _col("tier", _S),
        exp.alias_(_col("eff", _S), "valid_from"),
        exp.alias_(exp.Coalesce(this=next_eff, expressions=[_sentinel()]), "valid_to"),
    ).from_(changes)
    # is_current is derived from valid_to in an outer query rather than from a
    # second LEAD, so "current" and "open until SENTINEL" cannot disagree.
    is_current = exp.EQ(this=_col("valid_to", _V), expression=_sentinel())
    return exp.select(
        *(_col(name, _V) for name in ("cid", "name", "tier", "valid_from", "valid_to")),
        exp.alias_(is_current, "is_current"),
    ).from_(versions.subquery(_V))


def fct_orders_expression(orders: str, dim: str, *, dialect: str | None = None) -> exp.Select:
    """Build the as-of fact query as a sqlglot tree (see :func:`fct_orders_select`)."""
    target = resolve_dialect(dialect)
    on = exp.and_(
        exp.EQ(this=_col("cid", _O), expression=_col("cid", _D)),
        exp.GTE(this=_col("ots", _O), expression=_col("valid_from", _D)),
        exp.LT(this=_col("ots", _O), expression=_col("valid_to", _D)),
    )
    return (
        exp.select(_col("oid", _O), _col("cid", _O), _col("amt", _O), _col("tier", _D))
        .from_(parse_table(orders, target, alias=_O))
        .join(parse_table(dim, target, alias=_D), on=on, join_type="inner")
    )


def dim_scd2_select(src: str, *, dialect: str | None = None) -> str:
    """SELECT an SCD2 customer dimension from a CDC changelog.

    Columns, in order: ``cid, name, tier, valid_from, valid_to, is_current``.
    ``valid_from`` is the change's ``eff``; ``valid_to`` is
    ``COALESCE(LEAD(eff) OVER (PARTITION BY cid ORDER BY eff), SENTINEL)``;
    ``is_current`` is ``valid_to = SENTINEL``.

    Args:
        src: the changelog (``tbl``, ``db.tbl`` or ``cat.db.tbl``) with columns
            ``cid, eff, name, tier`` (``eff`` a BIGINT effective time).
        dialect: ``None`` for one body that runs on DuckDB, Spark SQL and
            Flink SQL (batch); or ``"duckdb"``, ``"spark"``, ``"flink"``.

    Returns:
        A SELECT statement (no trailing semicolon).

    Example:
        >>> import duckdb
        >>> con = duckdb.connect()
        >>> _ = con.execute("CREATE TABLE cust_cdc AS SELECT * FROM (VALUES (1, 10::BIGINT, 'Ann', 'bronze'), "
        ...         "(1, 20::BIGINT, 'Ann', 'gold')) t(cid, eff, name, tier)")
        >>> con.sql(dim_scd2_select("cust_cdc") + " ORDER BY valid_from").fetchall()
        [(1, 'Ann', 'bronze', 10, 20, False), (1, 'Ann', 'gold', 20, 9223372036854775807, True)]
    """
    return render(dim_scd2_expression(src, dialect=dialect), resolve_dialect(dialect))


def fct_orders_select(orders: str, dim: str, *, dialect: str | None = None) -> str:
    """SELECT each order with the dimension version effective at its event time.

    Columns, in order: ``oid, cid, amt, tier``. Join:
    ``o.cid = d.cid AND o.ots >= d.valid_from AND o.ots < d.valid_to``. An
    order with no version at its ``ots`` (before the customer's first change,
    or an unknown customer) has no row.

    Args:
        orders: the orders table with ``oid, cid, amt, ots`` (``ots`` BIGINT).
        dim: the dimension built by :func:`dim_scd2_select`.
        dialect: ``None`` for the portable body, or ``"duckdb"``, ``"spark"``,
            ``"flink"``.

    Returns:
        A SELECT statement (no trailing semicolon).

    Example:
        >>> print(fct_orders_select("orders", "dim_customer"))
        SELECT o.oid, o.cid, o.amt, d.tier FROM orders AS o INNER JOIN dim_customer AS d ON o.cid = d.cid AND o.ots >= d.valid_from AND o.ots < d.valid_to
    """
    return render(fct_orders_expression(orders, dim, dialect=dialect), resolve_dialect(dialect))
