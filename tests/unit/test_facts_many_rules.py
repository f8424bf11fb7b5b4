"""Issue 14 #9: the facts of a many-rule run are one flat VALUES list, not a UNION ALL chain
(each link deep-copied the chain: quadratic in rules; the timing is benchmarks/many_rules.py)."""

from __future__ import annotations

import duckdb
from sqlglot import exp

from sluicegate.compile.facts import FACT_COLUMNS, rows_select


def test_many_fact_rows_build_a_flat_statement_that_runs_on_both_dialects():
    rows = [
        {"run_id": "r", "check_id": f"rule:r{i}", "status": "pass", "metric": i / 7}
        for i in range(300)
    ]
    q = rows_select(FACT_COLUMNS, rows)
    assert not list(q.find_all(exp.Union))
    assert max(len(list(n.iter_expressions())) for n in q.walk()) >= 300  # one flat list
    for dialect in ("duckdb", "spark"):
        assert "VALUES" in q.sql(dialect, unsupported_level="raise")
    got = duckdb.sql(q.sql("duckdb")).fetchall()
    names = [n for n, _t in FACT_COLUMNS]
    assert len(got) == 300
    assert [r[names.index("check_id")] for r in got] == [r["check_id"] for r in rows]
    assert float(got[7][names.index("metric")]) == 1.0
