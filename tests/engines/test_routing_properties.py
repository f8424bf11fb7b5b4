"""Property tests: for random rows with NULLs and random rule sets, routing is a partition.

The oracle evaluates each rule in Python with SQL's three-valued logic; sluicegate's
outputs are read back from the DuckDB file.
"""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.engines.routing_harness import (
    make_contract,
    outputs,
    run,
    sql_and,
    sql_gt,
    sql_or,
    write_rows,
)

pytestmark = pytest.mark.duckdb

# (rule text, python evaluator over a row dict) — each may yield True/False/None
RULE_BANK = {
    "a_pos": ("a > 0", lambda r, ref: sql_gt(r["a"], 0)),
    "b_pos": ("b > 0", lambda r, ref: sql_gt(r["b"], 0)),
    "a_gt_b": ("a > b", lambda r, ref: sql_gt(r["a"], r["b"])),
    "a_null_or_small": (
        "a IS NULL OR a < 5",
        lambda r, ref: sql_or(r["a"] is None, None if r["a"] is None else r["a"] < 5),
    ),
    "k_known": (
        "k IN (SELECT k FROM ref)",
        lambda r, ref: None if r["k"] is None else r["k"] in ref,
    ),
    "both": ("a > 0 AND b > 0", lambda r, ref: sql_and(sql_gt(r["a"], 0), sql_gt(r["b"], 0))),
    "k_not_known": (
        "NOT (k IN (SELECT k FROM ref))",
        lambda r, ref: None if r["k"] is None else r["k"] not in ref,
    ),
}

values = st.one_of(st.none(), st.integers(-3, 6))
keys = st.one_of(st.none(), st.sampled_from(["x", "y", "z", "w"]))
row = st.fixed_dictionaries({"a": values, "b": values, "k": keys})


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    rows=st.lists(row, min_size=0, max_size=25),
    rule_names=st.lists(st.sampled_from(sorted(RULE_BANK)), min_size=1, max_size=4, unique=True),
    ref=st.lists(st.one_of(st.none(), st.sampled_from(["x", "y", "q"])), max_size=5),
)
def test_routing_is_a_partition_with_first_failing_reason(rows, rule_names, ref):
    root = Path(tempfile.mkdtemp(prefix="sg-prop-"))
    try:
        rules = [{"name": n, "expect": RULE_BANK[n][0]} for n in rule_names]
        contract = make_contract(root, rules)
        write_rows(root / "data.json", [{"id": i, **r} for i, r in enumerate(rows)])
        write_rows(root / "ref.json", [{"k": k} for k in ref])  # NULLs and duplicates included
        result = run(contract)
        assert result.metrics["ledger"]["balanced"]
        clean, dlq = outputs(root)
        clean_lines = {c[0] for c in clean}
        dlq_lines = {d[0] for d in dlq}
        assert len(clean) + len(dlq) == len(rows)  # nothing lost, nothing multiplied
        assert not clean_lines & dlq_lines  # disjoint
        assert clean_lines | dlq_lines == set(range(1, len(rows) + 1))  # union = input by lineage
        ref_set = {k for k in ref if k is not None}
        got = {d[0]: (d[1], d[2]) for d in dlq}
        for i, r in enumerate(rows, start=1):
            failing = [n for n in rule_names if RULE_BANK[n][1](r, ref_set) is not True]
            if failing:
                assert got[i] == (failing[0], failing), (r, rule_names)
            else:
                assert i in clean_lines
    finally:
        shutil.rmtree(root, ignore_errors=True)
