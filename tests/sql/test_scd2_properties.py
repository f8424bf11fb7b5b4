"""Property tests: for any CDC changelog the SCD2 dimension is a partition of time.

Hypothesis draws changelogs with few customers and few effective times, so
ties (two changes of one customer at the same ``eff``), single-version
customers and orders before, at and after every change are all common.
"""

from __future__ import annotations

from collections.abc import Callable

import duckdb
import pytest
from hypothesis import Phase, given, settings
from hypothesis import strategies as st
from seedcheck import SENTINEL, scd2_shape_problems
from test_seed_mutants import MUTANTS, _helper

from sluicegate.sql import dim_scd2_select, fct_orders_select

pytestmark = pytest.mark.duckdb

DimSql = Callable[..., str]
FctSql = Callable[..., str]

changes = st.lists(
    st.tuples(
        st.integers(1, 4),  # cid
        st.integers(0, 30),  # eff
        st.sampled_from(["Ann", "Bob"]),  # name
        st.sampled_from(["bronze", "silver", "gold"]),  # tier
    ),
    max_size=25,
)
orders = st.lists(st.tuples(st.integers(1, 5), st.integers(-2, 35)), max_size=25)


def _run(
    cdc: list[tuple], order_keys: list[tuple], dim_sql: DimSql, fct_sql: FctSql
) -> tuple[list[tuple], list[tuple]]:
    con = duckdb.connect()
    con.execute("CREATE TABLE cust_cdc (cid INTEGER, eff BIGINT, name VARCHAR, tier VARCHAR)")
    con.execute("CREATE TABLE orders (oid INTEGER, cid INTEGER, amt INTEGER, ots BIGINT)")
    if cdc:
        con.executemany("INSERT INTO cust_cdc VALUES (?, ?, ?, ?)", cdc)
    rows = [(oid, cid, 1, ots) for oid, (cid, ots) in enumerate(order_keys)]
    if rows:
        con.executemany("INSERT INTO orders VALUES (?, ?, ?, ?)", rows)
    con.execute(f"CREATE VIEW dim_customer AS {dim_sql('cust_cdc')}")
    dim = con.execute("SELECT * FROM dim_customer").fetchall()
    fct = con.execute(fct_sql("orders", "dim_customer")).fetchall()
    con.close()
    return dim, fct


def check_properties(
    cdc: list[tuple], order_keys: list[tuple], dim_sql: DimSql, fct_sql: FctSql
) -> None:
    """Assert the SCD2 and as-of properties for one changelog and order set."""
    dim, fct = _run(cdc, order_keys, dim_sql, fct_sql)

    # One version per change; per customer the half-open intervals start at the
    # first change, meet end to end, never overlap, and the last one is open.
    assert len(dim) == len(cdc)
    assert scd2_shape_problems(dim) == []
    for cid in {c[0] for c in cdc}:
        versions = [v for v in dim if v[0] == cid]
        assert min(v[3] for v in versions) == min(c[1] for c in cdc if c[0] == cid)
        nonempty = [v for v in versions if v[3] < v[4]]
        for i, a in enumerate(nonempty):
            for b in nonempty[i + 1 :]:
                assert max(a[3], b[3]) >= min(a[4], b[4]), f"overlap: {a} and {b}"
        assert sum(v[4] == SENTINEL for v in versions) == 1

    # Every order matches at most one version, exactly one iff its customer had
    # changed by then, and carries a tier effective at its event time.
    matched = {}
    for oid, _cid, _, tier in fct:
        assert oid not in matched, f"order {oid} matched more than one version"
        matched[oid] = tier
    for oid, (cid, ots) in enumerate(order_keys):
        effs = [c[1] for c in cdc if c[0] == cid and c[1] <= ots]
        if not effs:
            assert oid not in matched
            continue
        latest = max(effs)
        assert matched.get(oid) in {c[3] for c in cdc if c[0] == cid and c[1] == latest}


@settings(max_examples=150, deadline=None)
@given(cdc=changes, order_keys=orders)
def test_versions_partition_time_and_orders_match_at_most_once(
    cdc: list[tuple], order_keys: list[tuple]
) -> None:
    check_properties(cdc, order_keys, dim_scd2_select, fct_orders_select)


SCD2_MUTANTS = sorted(name for name, spec in MUTANTS.items() if spec[0] in ("dim", "fct"))


@pytest.mark.parametrize("name", SCD2_MUTANTS)
def test_the_property_catches_each_scd2_mutant(name: str) -> None:
    """The property is only worth something if a broken dimension or join fails it."""
    slot, builder, transform, _ = MUTANTS[name]
    mutant = _helper(builder, transform)
    dim_sql, fct_sql = (mutant, fct_orders_select) if slot == "dim" else (dim_scd2_select, mutant)

    # Generation only: shrinking a known-bad mutant's counterexample costs time
    # and proves nothing more.
    @settings(max_examples=150, deadline=None, database=None, phases=[Phase.generate])
    @given(cdc=changes, order_keys=orders)
    def prop(cdc: list[tuple], order_keys: list[tuple]) -> None:
        check_properties(cdc, order_keys, dim_sql, fct_sql)

    with pytest.raises(AssertionError):
        prop()
