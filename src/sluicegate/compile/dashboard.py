"""Dashboard queries as first-class objects: latest facts, 90-run trend, operator attention.

Each is a fixed, bounded (``LIMIT``), SELECT-only sqlglot tree over the facts table (and,
for attention, the quarantine table), rendered per dialect: ``sluicegate facts … --sql
--dialect trino`` prints the text for a user's own warehouse, the embedded engine runs
the DuckDB rendering. Only window functions, CASE, COALESCE, CONCAT and scalar subqueries
are used — the common ground of DuckDB, Spark SQL and Trino — and the tests run the
rendered SQL on DuckDB and Spark.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from .facts import FACT_COLUMNS
from .render import col, ident, lit

QUERIES = ("latest", "trend", "attention")
DEFAULT_LIMIT = 1000
TREND_RUNS = 90
TREND_LIMIT = 10_000

#: Quarantine rows an operator still has to act on, when the DLQ tracks a status.
DLQ_WAITING = ("quarantined", "fixed")

LATEST_COLUMNS = [n for n, _t in FACT_COLUMNS if n not in ("contract", "run_started_at")]
TREND_COLUMNS = [
    "check_id",
    "logical_date",
    "run_id",
    "status",
    "metric",
    "threshold_warn",
    "threshold_fail",
    "failed",
    "evaluated",
    "diagnostic",
    "evaluated_at",
]
ATTENTION_COLUMNS = [
    "source",
    "check_id",
    "status",
    "severity",
    "owner",
    "metric",
    "threshold_warn",
    "threshold_fail",
    "diagnostic",
    "detail",
    "logical_date",
    "run_id",
]


@dataclass(frozen=True)
class DashboardQuery:
    """A named query and the columns it returns, in order."""

    name: str
    query: exp.Query
    columns: list[str]


def _status_rank(status: exp.Expression) -> exp.Case:
    """fail first, then warn, then DLQ rows waiting, then pass."""
    return exp.Case(
        ifs=[
            exp.If(this=exp.EQ(this=status.copy(), expression=lit(s)), true=exp.Literal.number(i))
            for i, s in enumerate(("fail", "warn", "waiting"))
        ],
        default=exp.Literal.number(3),
    )


def _ranked(facts: str, contract: str) -> exp.Select:
    """Facts of ``contract`` with ``_rn`` = 1 for the newest fact of each check.

    Newest = latest logical date, then latest evaluation, then run id: a total order, so
    the answer is deterministic even for two runs of one date.
    """
    rn = exp.Window(
        this=exp.RowNumber(),
        partition_by=[col("check_id")],
        order=exp.Order(
            expressions=[
                exp.Ordered(this=col("logical_date"), desc=True),
                exp.Ordered(this=col("evaluated_at"), desc=True),
                exp.Ordered(this=col("run_id"), desc=True),
            ]
        ),
    )
    return (
        exp.select(*[col(n) for n, _t in FACT_COLUMNS], exp.alias_(rn, ident("_rn")))
        .from_(exp.Table(this=ident(facts)))
        .where(exp.EQ(this=col("contract"), expression=lit(contract)))
    )


def _sub(query: exp.Query, alias: str) -> exp.Subquery:
    return exp.Subquery(this=query, alias=exp.TableAlias(this=ident(alias)))


def latest(facts: str, contract: str, *, limit: int = DEFAULT_LIMIT) -> DashboardQuery:
    """The newest fact of every check, worst status first."""
    q = (
        exp.select(*[col(n) for n in LATEST_COLUMNS])
        .from_(_sub(_ranked(facts, contract), "_f"))
        .where(exp.EQ(this=col("_rn"), expression=exp.Literal.number(1)))
        .order_by(_status_rank(col("status")), col("kind"), col("check_id"))
        .limit(limit)
    )
    return DashboardQuery("latest", q, list(LATEST_COLUMNS))


def trend(
    facts: str,
    contract: str,
    *,
    runs: int = TREND_RUNS,
    check_id: str | None = None,
    limit: int = TREND_LIMIT,
) -> DashboardQuery:
    """The last ``runs`` facts of every check (or of one), oldest first per check."""
    cond: exp.Expression = exp.LTE(this=col("_rn"), expression=exp.Literal.number(runs))
    if check_id is not None:
        cond = exp.and_(cond, exp.EQ(this=col("check_id"), expression=lit(check_id)))
    q = (
        exp.select(*[col(n) for n in TREND_COLUMNS])
        .from_(_sub(_ranked(facts, contract), "_f"))
        .where(cond)
        .order_by(col("check_id"), col("logical_date"), col("evaluated_at"), col("run_id"))
        .limit(limit)
    )
    return DashboardQuery("trend", q, list(TREND_COLUMNS))


def _null(sql_type: str = "VARCHAR") -> exp.Expression:
    return exp.cast(exp.null(), sql_type)


def attention(
    facts: str,
    quarantine: str | None,
    contract: str,
    *,
    dlq_status: bool,
    limit: int = DEFAULT_LIMIT,
) -> DashboardQuery:
    """What an operator must look at: warn/fail facts, then DLQ rows waiting per reason.

    The newest fact of each check with status warn or fail, with its owner, thresholds and
    metric; and, per quarantine reason, how many rows wait — rows whose ``_dlq_status`` is
    ``quarantined`` or ``fixed`` when the DLQ tracks a status (``dlq_status``), else the
    quarantine rows of the contract's newest run. Waiting rows take the owner of the
    rule (or built-in reason) that quarantined them.
    """
    latest_f = exp.select(*[col(n) for n, _t in FACT_COLUMNS]).from_(
        _sub(_ranked(facts, contract), "_r")
    )
    latest_f = latest_f.where(exp.EQ(this=col("_rn"), expression=exp.Literal.number(1)))
    fact_rows = (
        exp.select(
            exp.alias_(lit("fact"), ident("source")),
            *[col(n) for n in ATTENTION_COLUMNS[1:]],
        )
        .from_(_sub(latest_f.copy(), "_l"))
        .where(exp.In(this=col("status"), expressions=[lit("warn"), lit("fail")]))
    )
    query: exp.Query = fact_rows
    if quarantine is not None:
        if dlq_status:
            waiting: exp.Expression = exp.In(
                this=col("_dlq_status", "q"), expressions=[lit(s) for s in DLQ_WAITING]
            )
        else:
            newest_run = (
                exp.select(col("run_id"))
                .from_(exp.Table(this=ident(facts)))
                .where(exp.EQ(this=col("contract"), expression=lit(contract)))
                .order_by(
                    exp.Ordered(this=col("logical_date"), desc=True),
                    exp.Ordered(this=col("evaluated_at"), desc=True),
                    exp.Ordered(this=col("run_id"), desc=True),
                )
                .limit(1)
            )
            waiting = exp.EQ(this=col("_run_id", "q"), expression=exp.Subquery(this=newest_run))
        dlq_rows = (
            exp.select(
                exp.alias_(lit("dlq"), ident("source")),
                exp.alias_(exp.func("CONCAT", lit("dlq:"), col("_reason", "q")), ident("check_id")),
                exp.alias_(lit("waiting"), ident("status")),
                exp.alias_(
                    exp.func("COALESCE", exp.func("MAX", col("severity", "l")), lit("warning")),
                    ident("severity"),
                ),
                exp.alias_(exp.func("MAX", col("owner", "l")), ident("owner")),
                exp.alias_(exp.cast(exp.func("COUNT", exp.Star()), "VARCHAR"), ident("metric")),
                exp.alias_(_null(), ident("threshold_warn")),
                exp.alias_(_null(), ident("threshold_fail")),
                exp.alias_(lit("DLQ_ROWS_WAITING"), ident("diagnostic")),
                exp.alias_(_null(), ident("detail")),
                exp.alias_(exp.func("MIN", col("_logical_date", "q")), ident("logical_date")),
                exp.alias_(_null(), ident("run_id")),
            )
            .from_(exp.Table(this=ident(quarantine), alias=exp.TableAlias(this=ident("q"))))
            .join(
                _sub(latest_f.copy(), "l"),
                on=exp.EQ(this=col("rule_name", "l"), expression=col("_reason", "q")),
                join_type="LEFT",
            )
            .where(waiting)
            .group_by(col("_reason", "q"))
        )
        query = exp.union(fact_rows, dlq_rows, distinct=False)
    outer = (
        exp.select(*[col(n) for n in ATTENTION_COLUMNS])
        .from_(_sub(query, "_a"))
        .order_by(_status_rank(col("status")), col("source"), col("check_id"))
        .limit(limit)
    )
    return DashboardQuery("attention", outer, list(ATTENTION_COLUMNS))


def build(
    name: str,
    facts: str,
    contract: str,
    *,
    quarantine: str | None = None,
    dlq_status: bool = False,
    check_id: str | None = None,
    runs: int = TREND_RUNS,
    limit: int | None = None,
) -> DashboardQuery:
    """One of :data:`QUERIES` by name (what the CLI calls)."""
    if name == "latest":
        return latest(facts, contract, limit=limit or DEFAULT_LIMIT)
    if name == "trend":
        return trend(facts, contract, runs=runs, check_id=check_id, limit=limit or TREND_LIMIT)
    if name == "attention":
        return attention(
            facts, quarantine, contract, dlq_status=dlq_status, limit=limit or DEFAULT_LIMIT
        )
    raise ValueError(f"unknown dashboard query '{name}' (one of {', '.join(QUERIES)})")
