"""The dashboard queries: SELECT-only and bounded in every dialect, and right — checked
against a Python oracle over a synthetic facts history, on DuckDB and on Spark."""

from __future__ import annotations

import datetime as dt
from typing import Any

import duckdb
import pytest
import sqlglot
from sqlglot import exp

from sluicegate.cli import facts_cmd
from sluicegate.compile import dashboard as d
from sluicegate.compile.facts import FACT_COLUMNS, empty_select, rows_select
from sluicegate.compile.render import render

CONTRACT = "c"
DIALECTS = ("duckdb", "spark", "trino")

pytestmark = pytest.mark.duckdb


def history() -> list[dict[str, Any]]:
    """Six runs of two checks and a rule, one date run twice, and another contract's facts."""
    rows = []
    t0 = dt.datetime(2024, 2, 1, 3, 0, 0)
    runs = [
        ("r1", "2024-01-01", 0),
        ("r2", "2024-01-02", 1),
        ("r3", "2024-01-03", 2),
        ("r3b", "2024-01-03", 3),  # the same date again, later: supersedes r3
        ("r0", "2023-12-31", 4),  # a backfill run last: not the latest by date
        ("r4", "2024-01-04", 5),
    ]
    status_of = {
        "r1": "pass",
        "r2": "warn",
        "r3": "fail",
        "r3b": "warn",
        "r0": "fail",
        "r4": "fail",
    }
    for run_id, day, i in runs:
        for check, kind, rule in (
            ("quarantine_share", "check", None),
            ("freshness", "check", None),
            ("rule:a_pos", "rule", "a_pos"),
        ):
            st = status_of[run_id] if check != "freshness" else "pass"
            rows.append(
                {
                    "contract": CONTRACT,
                    "run_id": run_id,
                    "check_id": check,
                    "kind": kind,
                    "rule_name": rule,
                    "version": 1,
                    "owner": "rules@x" if rule else "team@x",
                    "severity": "error",
                    "status": st,
                    "metric": f"0.{i}",
                    "threshold_warn": "0.1",
                    "threshold_fail": "0.3",
                    "failed": i,
                    "evaluated": 10,
                    "diagnostic": "D",
                    "detail": None,
                    "logical_date": day,
                    "run_started_at": str(t0 + dt.timedelta(hours=i)),
                    "evaluated_at": str(t0 + dt.timedelta(hours=i, minutes=1)),
                }
            )
    rows.append({**rows[0], "contract": "other", "run_id": "x1", "status": "fail"})
    return rows


def quarantine() -> list[tuple]:
    """(_reason, _run_id, _logical_date, _dlq_status) rows."""
    return [
        ("a_pos", "r4", "2024-01-04", "quarantined"),
        ("a_pos", "r4", "2024-01-04", "recycled"),
        ("a_pos", "r1", "2024-01-01", "fixed"),
        ("corrupt_record", "r4", "2024-01-04", "rejected"),
        ("corrupt_record", "r2", "2024-01-02", "quarantined"),
    ]


ORDER = {"fail": 0, "warn": 1, "waiting": 2}


def newest(rows: list[dict]) -> dict[str, dict]:
    mine = [r for r in rows if r["contract"] == CONTRACT]
    best: dict[str, dict] = {}
    for r in sorted(mine, key=lambda r: (r["logical_date"], r["evaluated_at"], r["run_id"])):
        best[r["check_id"]] = r
    return best


def oracle_latest(rows):
    return sorted(
        ((r["check_id"], r["run_id"], r["status"]) for r in newest(rows).values()),
        key=lambda t: (ORDER.get(t[2], 3), newest(rows)[t[0]]["kind"], t[0]),
    )


def oracle_trend(rows, runs, check):
    out = []
    mine = [r for r in rows if r["contract"] == CONTRACT and r["check_id"] == check]
    mine.sort(key=lambda r: (r["logical_date"], r["evaluated_at"], r["run_id"]))
    for r in mine[-runs:]:
        out.append((r["check_id"], r["logical_date"], r["run_id"], r["metric"]))
    return out


def oracle_attention(rows, q, dlq_status):
    latest = newest(rows)
    out = [
        ("fact", c, r["status"], r["owner"], r["metric"])
        for c, r in latest.items()
        if r["status"] in ("warn", "fail")
    ]
    if dlq_status:
        waiting = [x for x in q if x[3] in ("quarantined", "fixed")]
    else:
        last = max(
            (r for r in rows if r["contract"] == CONTRACT),
            key=lambda r: (r["logical_date"], r["evaluated_at"], r["run_id"]),
        )["run_id"]
        waiting = [x for x in q if x[1] == last]
    owners = {r["rule_name"]: r["owner"] for r in latest.values() if r["rule_name"]}
    counts: dict[str, int] = {}
    for reason, *_ in waiting:
        counts[reason] = counts.get(reason, 0) + 1
    out += [("dlq", f"dlq:{k}", "waiting", owners.get(k), str(n)) for k, n in counts.items()]
    return sorted(out, key=lambda t: (ORDER[t[2]], t[0], t[1]))


def project(rows: list[dict], cols: list[str]) -> list[tuple]:
    return [tuple(None if r[c] is None else str(r[c]) for c in cols) for r in rows]


# -- the queries are SELECT-only and bounded, in every dialect -------------------------------


def all_queries():
    return [
        d.latest("facts", CONTRACT),
        d.trend("facts", CONTRACT),
        d.attention("facts", "dlq", CONTRACT, dlq_status=True),
        d.attention("facts", "dlq", CONTRACT, dlq_status=False),
        d.attention("facts", None, CONTRACT, dlq_status=False),
    ]


@pytest.mark.parametrize("dialect", DIALECTS)
def test_queries_are_select_only_and_bounded(dialect):
    for q in all_queries():
        text = render(q.query, dialect)
        tree = sqlglot.parse_one(text, read=dialect)
        assert isinstance(tree, exp.Select), text
        assert tree.args.get("limit") is not None, text
        for node in (exp.Insert, exp.Update, exp.Delete, exp.Merge, exp.Create, exp.Drop):
            assert not list(tree.find_all(node)), (node, text)


def test_cli_constants_match_the_dashboard_module():
    assert facts_cmd.QUERIES == d.QUERIES and facts_cmd.TREND_RUNS == d.TREND_RUNS


# -- DuckDB -------------------------------------------------------------------------------


@pytest.fixture
def con():
    c = duckdb.connect()
    c.execute(
        render(
            exp.Create(
                this=exp.to_table("facts"), kind="TABLE", expression=empty_select(FACT_COLUMNS)
            ),
            "duckdb",
        )
    )
    c.execute(render(exp.insert(rows_select(FACT_COLUMNS, history()), "facts"), "duckdb"))
    c.execute(
        "CREATE TABLE dlq(_reason VARCHAR, _run_id VARCHAR, _logical_date DATE, _dlq_status VARCHAR)"
    )
    c.executemany("INSERT INTO dlq VALUES (?, ?, ?, ?)", quarantine())
    yield c
    c.close()


def fetch(c, q: d.DashboardQuery) -> list[dict]:
    cur = c.execute(render(q.query, "duckdb"))
    names = [x[0] for x in cur.description]
    assert names == q.columns
    return [dict(zip(names, r, strict=True)) for r in cur.fetchall()]


def test_duckdb_latest_trend_attention_match_the_oracle(con):
    rows = history()
    got = project(fetch(con, d.latest("facts", CONTRACT)), ["check_id", "run_id", "status"])
    assert got == [tuple(t) for t in oracle_latest(rows)]
    assert {r[1] for r in got} == {"r4"}
    got = project(
        fetch(con, d.trend("facts", CONTRACT, runs=3, check_id="quarantine_share")),
        ["check_id", "logical_date", "run_id", "metric"],
    )
    assert got == [tuple(t) for t in oracle_trend(rows, 3, "quarantine_share")]
    assert [r[2] for r in got] == ["r3", "r3b", "r4"]
    for dlq_status in (True, False):
        got = project(
            fetch(con, d.attention("facts", "dlq", CONTRACT, dlq_status=dlq_status)),
            ["source", "check_id", "status", "owner", "metric"],
        )
        assert got == [tuple(t) for t in oracle_attention(rows, quarantine(), dlq_status)]


def test_duckdb_limit_bounds_the_rows(con):
    assert len(fetch(con, d.latest("facts", CONTRACT, limit=2))) == 2
    assert len(fetch(con, d.trend("facts", CONTRACT, limit=4))) == 4


# -- Spark ----------------------------------------------------------------------------------


@pytest.mark.spark
def test_spark_rendering_runs_and_matches_the_oracle(spark):
    from pyspark.sql import types as T

    rows = history()
    schema = T.StructType(
        [
            T.StructField(
                n, {"INTEGER": T.IntegerType(), "BIGINT": T.LongType()}.get(t, T.StringType())
            )
            for n, t in FACT_COLUMNS
        ]
    )
    raw = spark.createDataFrame([tuple(r[n] for n, _t in FACT_COLUMNS) for r in rows], schema)
    typed = raw.selectExpr(
        *[
            f"CAST(`{n}` AS {'DATE' if t == 'DATE' else 'TIMESTAMP' if t == 'TIMESTAMP' else t.replace('VARCHAR', 'STRING')}) AS `{n}`"
            for n, t in FACT_COLUMNS
        ]
    )
    typed.createOrReplaceTempView("facts")
    spark.createDataFrame(
        quarantine(), "_reason STRING, _run_id STRING, _logical_date STRING, _dlq_status STRING"
    ).selectExpr(
        "_reason", "_run_id", "CAST(_logical_date AS DATE) AS _logical_date", "_dlq_status"
    ).createOrReplaceTempView("dlq")

    def sfetch(q):
        return [r.asDict() for r in spark.sql(render(q.query, "spark")).collect()]

    got = project(sfetch(d.latest("facts", CONTRACT)), ["check_id", "run_id", "status"])
    assert got == [tuple(t) for t in oracle_latest(rows)]
    got = project(
        sfetch(d.trend("facts", CONTRACT, runs=3, check_id="quarantine_share")),
        ["check_id", "logical_date", "run_id", "metric"],
    )
    assert got == [tuple(t) for t in oracle_trend(rows, 3, "quarantine_share")]
    for dlq_status in (True, False):
        got = project(
            sfetch(d.attention("facts", "dlq", CONTRACT, dlq_status=dlq_status)),
            ["source", "check_id", "status", "owner", "metric"],
        )
        assert got == [tuple(t) for t in oracle_attention(rows, quarantine(), dlq_status)]
