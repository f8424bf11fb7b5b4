"""Seed-compatible SQL helpers.

The seed exercises call these four functions and read back SQL query bodies;
sluicegate keeps their exact signatures and semantics so seed tests and
sluicegate's own model agree:

* :func:`good_orders_select` / :func:`quarantine_select` — seed 000, route
  every raw order to exactly one of good orders or the quarantine.
* :func:`dim_scd2_select` / :func:`fct_orders_select` — seed 003, an SCD2
  dimension from a CDC changelog and the as-of fact join.
* :data:`SENTINEL` — the far-future ``valid_to`` of open versions.

Called as the seeds call them, each returns one portable SELECT that runs
unchanged on DuckDB, Spark SQL and Flink SQL (batch). The keyword
``dialect="duckdb" | "spark" | "flink"`` renders for one engine instead, with
every identifier quoted in that engine's style. The SQL is built as sqlglot
expression trees (the ``*_expression`` builders in :mod:`.routing` and
:mod:`.star_schema`); table names are parsed, never pasted.

Example:
    >>> from sluicegate.sql import fct_orders_select
    >>> print(fct_orders_select("orders", "dim_customer", dialect="spark"))
    SELECT `o`.`oid`, `o`.`cid`, `o`.`amt`, `d`.`tier` FROM `orders` AS `o` INNER JOIN `dim_customer` AS `d` ON `o`.`cid` = `d`.`cid` AND `o`.`ots` >= `d`.`valid_from` AND `o`.`ots` < `d`.`valid_to`
"""

from __future__ import annotations

from sluicegate.sql.render import ENGINES
from sluicegate.sql.routing import good_orders_select, quarantine_select
from sluicegate.sql.star_schema import SENTINEL, dim_scd2_select, fct_orders_select

__all__ = [
    "ENGINES",
    "SENTINEL",
    "dim_scd2_select",
    "fct_orders_select",
    "good_orders_select",
    "quarantine_select",
]
