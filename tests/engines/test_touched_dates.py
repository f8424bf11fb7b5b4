"""A lake date table publishes exactly the dates whose rows changed, looking only at the
dates the transaction's statements touched (engines/touched_dates.py).

Every published table is read back by delta-rs and pyarrow (tests/engines/conformance),
and what each statement must leave published is written out here; the comparison's scope
is seen through the engine's one row-by-row comparison (a spy records the dates it is
asked about): a date whose digest (row count, sum of row hashes) changed is never compared
row by row. What a ``DELETE`` copies into the shadow is counted by a connection that
reads the copy's result.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import sqlglot

from sluicegate.compile.outputs import delete_run, insert_into
from sluicegate.engines import duckdb_delta, open_engine
from tests.conftest import record_calls
from tests.engines.conformance.test_storage import (
    D1,
    D2,
    D3,
    INITIAL,
    day,
    delta_rows,
    read,
    rows,
)


@pytest.fixture
def eng(tmp_path: Path):  # noqa: ANN201
    e = open_engine("duckdb", str(tmp_path / "wh"), table_format="delta")
    e.create_table_as("t", rows((1, "a", D1, 10), (2, "b", D1, 20), (3, "c", D2, 30)))
    yield e
    e.close()


@pytest.fixture
def compared(monkeypatch: pytest.MonkeyPatch) -> list:
    """The ``dates`` of every row-by-row comparison."""
    return record_calls(
        monkeypatch,
        duckdb_delta.DuckDBDeltaEngine,
        "_rows_differ",
        lambda _self, _name, dates: sorted(dates),
    )


@pytest.fixture
def hashed(monkeypatch: pytest.MonkeyPatch) -> list:
    """The dates of every read of the shadow's hash sums (a count per date comes first)."""

    def note(_self, table, dates, digest):  # noqa: ANN001, ANN202
        if isinstance(digest, sqlglot.exp.Sum) and table == "t":  # the shadow's side
            return None if dates is None else sorted(dates)
        return None

    return record_calls(monkeypatch, duckdb_delta.DuckDBDeltaEngine, "_per_date", note)


def _sql(text: str) -> sqlglot.exp.Expression:
    return sqlglot.parse_one(text, read="duckdb")


def test_a_delete_alone_publishes_its_date(eng, compared, hashed, tmp_path: Path):
    with eng.transaction():
        eng.execute(_sql(f"DELETE FROM t WHERE k = 2 AND _logical_date = DATE '{D1}'"))
        assert eng.staged_versions() == {"t": 1}
    assert delta_rows(tmp_path / "wh" / "t") == [INITIAL[0], INITIAL[2]]
    assert compared == hashed == []  # D1 lost a row: its count says so, nothing more read


def test_an_insert_alone_publishes_its_date(eng, compared, tmp_path: Path):
    with eng.transaction():
        eng.execute(insert_into("t", rows((9, "z", D3, 90))))
    assert delta_rows(tmp_path / "wh" / "t") == [*INITIAL, (9, "z", day(D3), 90)]
    assert compared == []


def test_rows_deleted_and_put_back_unchanged_publish_nothing(eng, compared):
    with eng.transaction():
        eng.execute(delete_run("t", D1))
        eng.execute(insert_into("t", rows((1, "a", D1, 10), (2, "b", D1, 20))))
        assert eng.staged_versions() == {"t": 0}  # D1 holds the same rows: not published
    assert eng.store.version("t") == 0
    assert compared == [[day(D1)]]  # as many rows as before: compared, D1 only


def test_a_rerun_with_other_rows_of_the_same_count_is_published(eng, compared, hashed, tmp_path):
    with eng.transaction():
        eng.execute(delete_run("t", D1))
        eng.execute(insert_into("t", rows((1, "a", D1, 10), (2, "b", D1, 21))))
    assert delta_rows(tmp_path / "wh" / "t") == [
        INITIAL[0],
        (2, "b", day(D1), 21),
        INITIAL[2],
    ]
    assert hashed == [[day(D1)]]  # as many rows: the hash sums read, for D1 only
    assert compared == []  # they differ: changed without a row comparison


def test_an_update_compares_the_whole_table(eng, compared, hashed, tmp_path: Path):
    with eng.transaction():
        eng.execute(insert_into("t", rows((9, "z", D3, 90))))
        eng.execute(_sql("UPDATE t SET n = n + 1 WHERE k = 3"))  # D2: not tracked
    assert delta_rows(tmp_path / "wh" / "t") == [
        *INITIAL[:2],
        (3, "c", day(D2), 31),
        (9, "z", day(D3), 90),
    ]
    assert hashed == [[day(D1), day(D2)]]  # D3's count changed; D1 and D2 hashed
    assert compared == [[day(D1)]]  # D2's hash sum changed; D1's equal: its rows compared


def _part(eng) -> dict:  # noqa: ANN001
    q = sqlglot.parse_one(
        "SELECT _logical_date, count(*) FROM _sg_part_t GROUP BY 1", read="duckdb"
    )
    return {d: n for d, n in eng.fetch(q)}


def test_the_shadow_holds_only_the_dates_a_statement_can_change(eng, tmp_path: Path):
    nulls = sqlglot.parse_one(
        "INSERT INTO t SELECT 5 AS k, 'n' AS s, CAST(NULL AS DATE) AS _logical_date, 50 AS n",
        read="duckdb",
    )
    eng.execute(nulls)  # a row without a date, published
    with eng.transaction():
        eng.execute(insert_into("t", rows((9, "z", D3, 90))))
        assert _part(eng) == {day(D3): 1}  # an insert opens nothing
        eng.execute(_sql(f"DELETE FROM t WHERE _logical_date = DATE '{D1}' AND k = 1"))
        assert _part(eng) == {day(D1): 1, day(D3): 1}  # D1 opened: 2 copied, 1 deleted
        # the transaction reads the table as its statements left it, the dateless row too
        assert sorted(read(eng), key=lambda r: r[0]) == [
            INITIAL[1],
            INITIAL[2],
            (5, "n", None, 50),
            (9, "z", day(D3), 90),
        ]
    assert delta_rows_all(tmp_path / "wh" / "t") == [
        (2, "b", day(D1), 20),
        (3, "c", day(D2), 30),
        (5, "n", None, 50),
        (9, "z", day(D3), 90),
    ]


def test_an_update_opens_every_date(eng):
    with eng.transaction():
        eng.execute(_sql("UPDATE t SET n = n + 1 WHERE k = 3"))
        assert _part(eng) == {day(D1): 2, day(D2): 1}
        assert [r[3] for r in read(eng)] == [10, 20, 31]


def test_a_shadowed_table_replaced_or_dropped_in_the_same_transaction(eng, tmp_path: Path):
    with eng.transaction():
        eng.execute(insert_into("t", rows((9, "z", D3, 90))))
        eng.create_table_as("t", rows((7, "r", D2, 70)))  # replaced whole after a change
    assert delta_rows(tmp_path / "wh" / "t") == [(7, "r", day(D2), 70)]
    with eng.transaction():
        eng.execute(insert_into("t", rows((8, "y", D3, 80))))
        eng.execute(_sql("DROP TABLE t"))
    assert not eng.table_exists("t") and not (tmp_path / "wh" / "t").exists()


def delta_rows_all(path: Path) -> list[tuple]:
    """Every row of a Delta table, dateless ones too, read by delta-rs's file list."""
    import pyarrow.dataset as ds
    from deltalake import DeltaTable

    got = []
    for uri in DeltaTable(str(path)).file_uris():
        part = uri.split("_logical_date=")[1].split("/")[0]
        date = None if part == "__HIVE_DEFAULT_PARTITION__" else day(part)
        got += [(r["k"], r["s"], date, r["n"]) for r in ds.dataset(uri).to_table().to_pylist()]
    return sorted(got, key=lambda r: r[0])


class _CountingCopies:
    """The engine's connection, counting the rows each copy into the part inserts."""

    def __init__(self, con) -> None:  # noqa: ANN001
        self._con = con
        self.copied: list[int] = []

    def execute(self, sql: str, *args, **kwargs):  # noqa: ANN002, ANN003, ANN201
        result = self._con.execute(sql, *args, **kwargs)
        if sql.startswith('INSERT INTO "_sg_part_t" SELECT * FROM "_sg_delta_t"'):
            self.copied.append(result.fetchone()[0])
        return result

    def __getattr__(self, name: str):  # noqa: ANN204
        return getattr(self._con, name)


@pytest.fixture
def copies(eng):  # noqa: ANN001, ANN201
    spy = _CountingCopies(eng.con)
    eng.con = spy
    yield spy
    eng.con = spy._con


def test_a_rerun_of_a_date_copies_none_of_its_published_rows(eng, copies, tmp_path: Path):
    with eng.transaction():
        eng.execute(delete_run("t", D1))
        eng.execute(insert_into("t", rows((4, "d", D1, 40))))
        assert _part(eng) == {day(D1): 1}
    assert copies.copied == []  # D1 opened without a copy: all its rows were to go
    assert delta_rows(tmp_path / "wh" / "t") == [INITIAL[2], (4, "d", day(D1), 40)]


@pytest.mark.parametrize(
    ("where", "copied", "left"),
    [  # the rows each copy into the part inserted; what stays published
        (f"_logical_date IN (DATE '{D1}', DATE '{D3}')", [], [2]),  # whole dates: no copy
        (f"t._logical_date = CAST('{D1}' AS DATE)", [], [2]),
        (f"_logical_date = DATE '{D1}' OR k = 3", [0], []),  # not whole dates: read
        (f"k = 1 AND _logical_date = DATE '{D1}'", [1], [1, 2]),
        ("k = 1", [1], [1, 2]),  # a literal, but not of the date
        ("_logical_date = (SELECT min(_logical_date) FROM t)", [2], [2]),  # a subquery
        ("random() < 2", [3], []),  # volatile: evaluated once, by the DELETE
    ],
)
def test_what_a_delete_copies(eng, copies, tmp_path: Path, where: str, copied: list, left):
    with eng.transaction():
        eng.execute(_sql(f"DELETE FROM t WHERE {where}"))
    assert copies.copied == copied
    assert delta_rows_all(tmp_path / "wh" / "t") == [INITIAL[i] for i in left]


def test_a_delete_copies_only_the_rows_it_spares(eng, copies, tmp_path: Path):
    nulls = sqlglot.parse_one(
        f"INSERT INTO t SELECT 5 AS k, 'n' AS s, DATE '{D1}' AS _logical_date, NULL AS n",
        read="duckdb",
    )
    eng.execute(nulls)  # a row whose condition below is NULL: spared, so copied
    with eng.transaction():
        eng.execute(_sql(f"DELETE FROM t AS x WHERE x._logical_date = DATE '{D1}' AND x.n > 15"))
        assert _part(eng) == {day(D1): 2}
    assert copies.copied == [2]  # k=1 and k=5 spared; k=2 never copied
    assert delta_rows_all(tmp_path / "wh" / "t") == [
        INITIAL[0],
        INITIAL[2],
        (5, "n", day(D1), None),
    ]


def test_a_delete_reading_a_table_copies_its_dates_whole(eng, copies, tmp_path: Path):
    with eng.transaction():
        eng.execute(_sql("DELETE FROM t WHERE k IN (SELECT max(k) FROM t WHERE n < 25)"))
        assert _part(eng) == {day(D1): 1}
    assert copies.copied == [2]  # the subquery reads t: nothing can be spared up front
    assert delta_rows(tmp_path / "wh" / "t") == [INITIAL[0], INITIAL[2]]


@pytest.mark.parametrize(
    ("now", "differ"),
    [
        ([(1, "a", D1, 10), (2, "b", D1, 20)], []),  # the published rows
        ([(2, "b", D1, 20), (1, "a", D1, 10)], []),  # in another order
        ([(1, "a", D1, 10), (1, "a", D1, 10)], [day(D1)]),  # a row twice, one gone
        ([(1, "a", D1, 10), (2, "b", D1, 21)], [day(D1)]),  # one value changed
        ([(1, "a", D1, 10)], [day(D1)]),  # a row fewer
    ],
)
def test_the_row_comparison_counts_each_row(eng, now: list, differ: list):
    with eng.transaction():
        eng.execute(delete_run("t", D1))
        eng.execute(insert_into("t", rows(*now)))
        assert eng._rows_differ("t", [day(D1), day(D2)]) == differ
