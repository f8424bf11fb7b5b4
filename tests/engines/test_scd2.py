"""SCD2 dimensions (model.dimensions) reconciled with independent computations.

The dimension is built by sluicegate's compiler (``compile/model/scd2.py``), rendered and
run on DuckDB (and on Spark SQL in the ``spark``-marked test), then compared with

* a hand-written DuckDB query (DISTINCT ON for ties, QUALIFY on a struct LAG to collapse),
* a pure-Python oracle of the documented rules (used by the Hypothesis properties).

Mutants of the compiler (monkeypatched) must fail the same checks: overwrite instead of
versioning, old versions left open, old versions left current, no tie rule.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable

import duckdb
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from sqlglot import exp

from sluicegate.compile.model import scd2
from sluicegate.compile.model.schema import SENTINEL_INT
from sluicegate.compile.render import render
from sluicegate.contract.model_spec import Dimension

pytestmark = pytest.mark.duckdb

DIM = Dimension(reference="cdc", key="cid", effective="eff", attributes=["name", "tier"])
REF = "_sg_ref_cdc"
COLS = ["cid", "eff", "name", "tier", "_source_file", "_source_line", "_corrupt", "_mismatch"]
OUT = ["cid", "name", "tier", "version", "valid_from", "valid_to", "is_current"]


def change(cid, eff, name, tier, line, file="cdc.json", corrupt=False, mismatch=False):  # noqa: ANN001, ANN201
    return (cid, eff, name, tier, file, line, corrupt, mismatch)


def load_ref(con: duckdb.DuckDBPyConnection, rows: list[tuple], eff_type: str = "BIGINT") -> None:
    con.execute(
        f"CREATE OR REPLACE TABLE {REF} (cid INTEGER, eff {eff_type}, name VARCHAR, tier VARCHAR, "
        "_source_file VARCHAR, _source_line BIGINT, _corrupt BOOLEAN, _mismatch BOOLEAN)"
    )
    if rows:
        con.executemany(f"INSERT INTO {REF} VALUES (?, ?, ?, ?, ?, ?, ?, ?)", rows)


def build_dim(con: duckdb.DuckDBPyConnection, interval_type: str = "BIGINT") -> list[tuple]:
    """The dimension as sluicegate builds it (looked up at call time: mutants patch it)."""
    q = scd2.scd2_select(REF, DIM, interval_type)
    sql = render(q, "duckdb")
    return con.execute(f"SELECT {', '.join(OUT)} FROM ({sql}) ORDER BY cid, valid_from").fetchall()


ORACLE_SQL = """
WITH usable AS (
  SELECT * FROM {ref}
  WHERE NOT _corrupt AND NOT _mismatch AND cid IS NOT NULL AND eff IS NOT NULL
), one_per_time AS (                      -- ties: the change written last wins
  SELECT DISTINCT ON (cid, eff) cid, eff, name, tier
  FROM usable ORDER BY cid, eff, _source_file DESC, _source_line DESC
), opening AS (                           -- a change that changes nothing opens nothing
  SELECT * FROM one_per_time
  QUALIFY lag(struct_pack(n := name, t := tier)) OVER (PARTITION BY cid ORDER BY eff)
          IS DISTINCT FROM struct_pack(n := name, t := tier)
)
SELECT cid, name, tier,
       row_number() OVER w AS version,
       eff AS valid_from,
       lead(eff, 1, {sentinel}) OVER w AS valid_to,
       lead(eff) OVER w IS NULL AS is_current
FROM opening
WINDOW w AS (PARTITION BY cid ORDER BY eff)
ORDER BY cid, valid_from
"""


def oracle_sql(con: duckdb.DuckDBPyConnection, sentinel: str = str(SENTINEL_INT)) -> list[tuple]:
    return con.execute(ORACLE_SQL.format(ref=REF, sentinel=sentinel)).fetchall()


def oracle_py(rows: list[tuple], sentinel: object = SENTINEL_INT) -> list[tuple]:
    """The documented rules in plain Python."""
    last: dict[tuple, tuple] = {}
    for cid, eff, name, tier, file, line, corrupt, mismatch in rows:
        if corrupt or mismatch or cid is None or eff is None:
            continue
        k = (cid, eff)
        if k not in last or (file, line) > last[k][0]:
            last[k] = ((file, line), name, tier)
    out = []
    for cid in sorted({k[0] for k in last}):
        times = sorted(e for c, e in last if c == cid)
        opened: list[tuple] = []
        for eff in times:
            _, name, tier = last[(cid, eff)]
            if opened and (opened[-1][1], opened[-1][2]) == (name, tier):
                continue
            opened.append((eff, name, tier))
        for i, (eff, name, tier) in enumerate(opened):
            nxt = opened[i + 1][0] if i + 1 < len(opened) else None
            out.append((cid, name, tier, i + 1, eff, sentinel if nxt is None else nxt, nxt is None))
    return out


# A changelog with every hazard: unsorted, exact duplicates, a tie, a no-op change,
# a repeat of an old value later (a real change), a bad row of each kind.
HOSTILE = [
    change(2, 50, "Bob", "silver", 1),
    change(1, 30, "Ann", "gold", 2),
    change(1, 10, "Ann", "bronze", 3),
    change(1, 20, "Ann", "silver", 4),
    change(1, 20, "Ann", "silver", 5),  # exact duplicate event
    change(2, 40, "Bob", "bronze", 6),
    change(2, 60, "Bob", "bronze", 7),  # back to an old value: a real change
    change(3, 5, "Cy", "gold", 8),
    change(3, 7, "Cy", "gold", 9),  # no-op: collapses into the version from 5
    change(3, 9, "Cy", "plat", 10),
    change(4, 100, "Di", "tin", 11),
    change(4, 100, "Di", "iron", 12),  # tie at 100: the later line wins
    change(5, 1, "Ed", "x", 13, corrupt=True),
    change(5, 2, "Ed", "y", 14, mismatch=True),
    change(None, 3, "??", "z", 15),
    change(6, None, "Fay", "z", 16),
]


def test_hostile_changelog_matches_both_oracles():
    con = duckdb.connect()
    load_ref(con, HOSTILE)
    got = build_dim(con)
    assert got == oracle_sql(con)
    assert got == oracle_py(HOSTILE)
    by = {}
    for r in got:
        by.setdefault(r[0], []).append(r)
    # multiple versions per key, closed by the next one, the newest open and current
    assert [(v[4], v[5], v[6]) for v in by[1]] == [
        (10, 20, False),
        (20, 30, False),
        (30, SENTINEL_INT, True),
    ]
    assert [v[3] for v in by[1]] == [1, 2, 3]
    assert [v[2] for v in by[2]] == ["bronze", "silver", "bronze"]
    assert [(v[2], v[4], v[5]) for v in by[3]] == [("gold", 5, 9), ("plat", 9, SENTINEL_INT)]
    assert [(v[2], v[4]) for v in by[4]] == [("iron", 100)]  # last by lineage wins
    assert 5 not in by and 6 not in by  # unusable changes open no version
    rejected = con.execute(render(scd2.rejected_changes(REF, DIM), "duckdb")).fetchone()[0]
    assert rejected == 4
    # the run's one-query metrics agree: versions, current versions (one per key), rejected
    con.execute(f"CREATE TABLE dim AS {render(scd2.scd2_select(REF, DIM, 'BIGINT'), 'duckdb')}")
    metrics = con.execute(render(scd2.dimension_metrics("dim", REF, DIM), "duckdb")).fetchone()
    assert metrics == (len(got), len(by), 4)


def test_tie_rule_is_lineage_not_input_order():
    """The tie winner is the greatest (_source_file, _source_line), whatever the row order."""
    rows = [
        change(1, 10, "Ann", "late-file", 1, file="b.json"),
        change(1, 10, "Ann", "early-file", 99, file="a.json"),
    ]
    for ordering in (rows, rows[::-1]):
        con = duckdb.connect()
        load_ref(con, ordering)
        assert [r[2] for r in build_dim(con)] == ["late-file"]


def test_null_attributes_compare_null_safely():
    """NULL -> NULL is no change; NULL -> value and value -> NULL are changes."""
    rows = [
        change(1, 1, None, "a", 1),
        change(1, 2, None, "a", 2),
        change(1, 3, "Ann", "a", 3),
        change(1, 4, None, "a", 4),
    ]
    con = duckdb.connect()
    load_ref(con, rows)
    assert [(r[1], r[4]) for r in build_dim(con)] == [(None, 1), ("Ann", 3), (None, 4)]


@pytest.mark.parametrize(
    ("eff_type", "values", "sentinel"),
    [
        ("INTEGER", [10, 20], SENTINEL_INT),
        ("BIGINT", [10, 20], SENTINEL_INT),
        (
            "TIMESTAMP",
            [dt.datetime(2024, 1, 1), dt.datetime(2024, 3, 1, 12)],
            dt.datetime(9999, 12, 31, 23, 59, 59),
        ),
        ("DATE", [dt.date(2024, 1, 1), dt.date(2024, 3, 1)], dt.date(9999, 12, 31)),
    ],
)
def test_sentinel_per_time_type(eff_type: str, values: list, sentinel: object):
    rows = [change(1, values[1], "Ann", "b", 1), change(1, values[0], "Ann", "a", 2)]
    con = duckdb.connect()
    load_ref(con, rows, eff_type)
    iv = "BIGINT" if eff_type == "INTEGER" else eff_type
    got = build_dim(con, iv)
    assert [(r[4], r[5], r[6]) for r in got] == [
        (values[0], values[1], False),
        (values[1], sentinel, True),
    ]
    assert got == oracle_py(rows, sentinel)


# -- mutants: each must fail the reconciliation ----------------------------------------


def _replace_alias(q: exp.Select, name: str, new: exp.Expression) -> exp.Select:
    q = q.copy()
    for a in q.expressions:
        if a.alias == name:
            a.set("this", new)
    return q


def _overwrite(ref: str, dim: Dimension, iv: str) -> exp.Select:
    """Keep only the newest change per key: history is overwritten (SCD1)."""
    q = ORIGINAL(ref, dim, iv)
    q = _replace_alias(q, "valid_to", scd2.sentinel(iv))
    q = _replace_alias(q, "is_current", exp.true())
    return (
        exp.select(exp.Star())
        .from_(q.subquery("_m"))
        .qualify("ROW_NUMBER() OVER (PARTITION BY cid ORDER BY valid_from DESC) = 1")
    )


def _open_old(ref: str, dim: Dimension, iv: str) -> exp.Select:
    """Every version stays open until the sentinel and current (the seed's stub)."""
    q = _replace_alias(ORIGINAL(ref, dim, iv), "valid_to", scd2.sentinel(iv))
    return _replace_alias(q, "is_current", exp.true())


def _current_old(ref: str, dim: Dimension, iv: str) -> exp.Select:
    """Intervals closed, but old versions still flagged current."""
    return _replace_alias(ORIGINAL(ref, dim, iv), "is_current", exp.true())


def _no_tie_rule(ref: str, dim: Dimension, iv: str) -> exp.Select:
    """Ties not resolved: both changes at one time become versions."""
    q = ORIGINAL(ref, dim, iv).copy()
    for w in q.find_all(exp.EQ):
        if isinstance(w.this, exp.Column) and w.this.name == "_sg_tie":
            w.replace(exp.true())
    return q


def _no_collapse(ref: str, dim: Dimension, iv: str) -> exp.Select:
    """No-op changes open versions."""
    q = ORIGINAL(ref, dim, iv).copy()
    q.set("where", None)
    return q


ORIGINAL = scd2.scd2_select
MUTANTS: dict[str, Callable[..., exp.Select]] = {
    "overwrite_instead_of_versioning": _overwrite,
    "old_versions_left_open": _open_old,
    "old_versions_left_current": _current_old,
    "no_tie_rule": _no_tie_rule,
    "no_collapse": _no_collapse,
}


@pytest.mark.parametrize("mutant", sorted(MUTANTS))
def test_mutant_is_killed(mutant: str, monkeypatch: pytest.MonkeyPatch):
    monkeypatch.setattr(scd2, "scd2_select", MUTANTS[mutant])
    with pytest.raises(AssertionError):
        test_hostile_changelog_matches_both_oracles()


# -- properties ------------------------------------------------------------------------

changelogs = st.lists(
    st.tuples(
        st.one_of(st.integers(1, 4), st.none()),
        st.one_of(st.integers(0, 30), st.none()),
        st.sampled_from(["Ann", "Bob", None]),
        st.sampled_from(["bronze", "silver"]),
        st.sampled_from(["a.json", "b.json"]),
        st.integers(1, 40),
        st.sampled_from([False, False, False, False, True]),
        st.sampled_from([False, False, False, True]),
    ),
    max_size=30,
)


def check_intervals(dim: list[tuple]) -> None:
    """Per key: contiguous, non-overlapping, non-empty, exactly one current and open."""
    keys = {r[0] for r in dim}
    for k in keys:
        vs = sorted((r for r in dim if r[0] == k), key=lambda r: r[4])
        assert [v[3] for v in vs] == list(range(1, len(vs) + 1))
        for a, b in zip(vs, vs[1:], strict=False):
            assert a[5] == b[4], f"gap or overlap between {a} and {b}"
            assert a[6] is False
        for v in vs:
            assert v[4] < v[5], f"empty interval {v}"
        assert vs[-1][5] == SENTINEL_INT and vs[-1][6] is True


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(changelogs, st.lists(st.tuples(st.integers(1, 5), st.integers(-2, 35)), max_size=20))
def test_scd2_properties(rows: list[tuple], probes: list[tuple]):
    con = duckdb.connect()
    load_ref(con, rows)
    dim = build_dim(con)
    assert dim == oracle_py(rows)
    check_intervals(dim)
    # every probe (key, t) falls in at most one version: the as-of rule is a function
    for k, t in probes:
        hits = [v for v in dim if v[0] == k and v[4] <= t < v[5]]
        assert len(hits) <= 1
        earliest = min((v[4] for v in dim if v[0] == k), default=None)
        assert (len(hits) == 1) == (earliest is not None and t >= earliest)


# -- Spark SQL ----------------------------------------------------------------------


@pytest.mark.spark
def test_scd2_runs_on_spark_identically(spark):
    from pyspark.sql.types import (
        BooleanType,
        IntegerType,
        LongType,
        StringType,
        StructField,
        StructType,
    )

    schema = StructType(
        [
            StructField("cid", IntegerType()),
            StructField("eff", LongType()),
            StructField("name", StringType()),
            StructField("tier", StringType()),
            StructField("_source_file", StringType()),
            StructField("_source_line", LongType()),
            StructField("_corrupt", BooleanType()),
            StructField("_mismatch", BooleanType()),
        ]
    )
    spark.createDataFrame(HOSTILE, schema).createOrReplaceTempView(REF)
    sql = render(scd2.scd2_select(REF, DIM, "BIGINT"), "spark")
    got = [
        tuple(r)
        for r in spark.sql(
            f"SELECT {', '.join(OUT)} FROM ({sql}) ORDER BY cid, valid_from"
        ).collect()
    ]
    con = duckdb.connect()
    load_ref(con, HOSTILE)
    assert got == build_dim(con) == oracle_py(HOSTILE)
    rejected = spark.sql(render(scd2.rejected_changes(REF, DIM), "spark")).collect()[0][0]
    assert rejected == 4
    spark.sql(sql).createOrReplaceTempView("_dim_spark")
    metrics = spark.sql(render(scd2.dimension_metrics("_dim_spark", REF, DIM), "spark")).collect()
    assert tuple(metrics[0]) == (len(got), len({r[0] for r in got}), 4)
