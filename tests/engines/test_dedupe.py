"""Deterministic dedupe, against a pure-Python oracle.

The compiled ranking runs on a typed table whose rows are inserted in a shuffled physical
order, so only the declared total order — ``order_by`` NULLS LAST, then ``_source_file``,
``_source_line`` — can make the kept row come out right. Mutants of each rule of the spec
(no lineage tie-break, NULLS FIRST, corrupt rows or NULL keys taking part, mismatched rows
left out, the wrong kept lineage) must disagree with the oracle.
"""

from __future__ import annotations

import json
import random
from pathlib import Path
from typing import Any

import duckdb
import pytest
from sqlglot import exp

from sluicegate.compile import dedupe as dedupe_c
from sluicegate.compile.render import render
from sluicegate.contract.models import Dedupe
from tests.engines.test_hostile_corpus import (
    check_ledger,
    fetch,
    placement,
    run,
    write_contract,
    write_lines,
)

pytestmark = pytest.mark.duckdb

DEDUPE = Dedupe(key=["k1", "k2"], order_by=["ts DESC", "v"])


def make_rows(seed: int = 7, n: int = 2_000) -> list[dict[str, Any]]:
    """Typed rows with many ties: few keys, few ts/v values, NULLs everywhere."""
    rng = random.Random(seed)
    rows = []
    for i in range(n):
        rows.append(
            {
                "_source_file": f"/feed/part-{rng.randrange(3)}.json",
                "_source_line": i + 1,
                "k1": rng.choice(["a", "b", "c", None]),
                "k2": rng.choice([1, 2, 3, 4, 5, None]) if rng.random() < 0.9 else None,
                "ts": rng.choice([10, 20, None]),
                "v": rng.choice(["x", "y", None]),
                "_corrupt": rng.random() < 0.05,
                "_mismatch": rng.random() < 0.1,
            }
        )
    for r in rows:
        if r["_corrupt"]:  # a corrupt record keeps its (partition-like) key in this test
            r["ts"] = r["v"] = None
    return rows


def oracle(rows: list[dict[str, Any]]) -> dict[tuple[str, int], tuple[int, Any, Any]]:
    """(file, line) -> (_rn, kept file, kept line), written from the spec alone."""

    def nulls_last(value: Any, desc: bool = False) -> tuple[int, Any]:
        if value is None:
            return (1, 0)
        return (0, -value if desc else value)

    groups: dict[tuple, list[dict]] = {}
    out = {}
    for r in rows:
        lineage = (r["_source_file"], r["_source_line"])
        if r["_corrupt"] or r["k1"] is None or r["k2"] is None:
            out[lineage] = (1, None, None)
        else:
            groups.setdefault((r["k1"], r["k2"]), []).append(r)
    for members in groups.values():
        if len(members) == 1:
            m = members[0]
            out[(m["_source_file"], m["_source_line"])] = (1, None, None)
            continue
        members.sort(
            key=lambda r: (
                nulls_last(r["ts"], desc=True),
                nulls_last(r["v"]),
                r["_source_file"],
                r["_source_line"],
            )
        )
        kept = members[0]
        for rn, m in enumerate(members, 1):
            out[(m["_source_file"], m["_source_line"])] = (
                rn,
                kept["_source_file"],
                kept["_source_line"],
            )
    return out


def ranked(rows: list[dict[str, Any]], seed: int = 1) -> dict[tuple[str, int], tuple]:
    """Run the compiled ranked_select on the rows inserted in a shuffled order."""
    shuffled = rows[:]
    random.Random(seed).shuffle(shuffled)
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE typed (_source_file VARCHAR, _source_line BIGINT, k1 VARCHAR, k2 INTEGER, "
        "ts INTEGER, v VARCHAR, _corrupt BOOLEAN, _mismatch BOOLEAN)"
    )
    con.executemany(
        "INSERT INTO typed VALUES (?, ?, ?, ?, ?, ?, ?, ?)",
        [
            [r[c] for c in ("_source_file", "_source_line", "k1", "k2", "ts", "v")]
            + [r["_corrupt"], r["_mismatch"]]
            for r in shuffled
        ],
    )
    # as a run does: the repeated keys a table of their own, then the ranking
    con.execute(
        "CREATE TABLE repeated AS " + render(dedupe_c.repeated_select("typed", DEDUPE), "duckdb")
    )
    con.execute(
        "CREATE TABLE ranking AS "
        + render(dedupe_c.ranking_select("typed", DEDUPE, "repeated"), "duckdb")
    )
    sql = render(dedupe_c.ranked_select("typed", DEDUPE, "ranking"), "duckdb")
    got = con.execute(
        f"SELECT _source_file, _source_line, _rn, _kept_source_file, _kept_source_line FROM ({sql})"
    ).fetchall()
    assert len(got) == len(rows)  # every row exactly once
    return {(f, n): (rn, kf, kn) for f, n, rn, kf, kn in got}


def test_ranking_matches_the_oracle_whatever_the_physical_order():
    rows = make_rows()
    want = oracle(rows)
    assert sum(1 for rn, *_ in want.values() if rn > 1) > 200  # plenty of duplicates
    for seed in (1, 2, 3):
        assert ranked(rows, seed) == want


def test_the_inline_ranking_is_the_same_relation():
    rows = make_rows(seed=11, n=300)
    con = duckdb.connect()
    con.execute(
        "CREATE TABLE typed AS SELECT * FROM (VALUES "
        + ",".join(
            "({!r}, {}, {}, {}, {}, {}, {}, {})".format(
                r["_source_file"],
                r["_source_line"],
                "NULL" if r["k1"] is None else repr(r["k1"]),
                "NULL" if r["k2"] is None else r["k2"],
                "NULL" if r["ts"] is None else r["ts"],
                "NULL" if r["v"] is None else repr(r["v"]),
                r["_corrupt"],
                r["_mismatch"],
            )
            for r in rows
        )
        + ") t(_source_file, _source_line, k1, k2, ts, v, _corrupt, _mismatch)"
    )
    sql = render(dedupe_c.ranked_select("typed", DEDUPE), "duckdb")
    got = con.execute(
        f"SELECT _source_file, _source_line, _rn, _kept_source_file, _kept_source_line FROM ({sql})"
    ).fetchall()
    assert {(f, n): (rn, kf, kn) for f, n, rn, kf, kn in got} == oracle(rows)


def test_no_dedupe_keeps_every_row():
    sql = render(dedupe_c.ranked_select("t", None), "duckdb")
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT 'f' AS _source_file, 1 AS _source_line, 1 AS k")
    assert con.execute(f"SELECT _rn, _kept_source_line FROM ({sql})").fetchall() == [(1, None)]


# -- mutants of the spec's rules ---------------------------------------------------------


REAL_ORDER_TERMS = dedupe_c.order_terms
REAL_RANKING = dedupe_c.ranking_select
REAL_REPEATED = dedupe_c.repeated_select


def _rewritten(rewrite):  # noqa: ANN001, ANN202 - rewrite: node -> node
    """The ranking's two selects (the repeated keys, the ranking) with their trees
    rewritten node by node."""

    def ranking(*a: Any, **k: Any) -> exp.Expression:
        return REAL_RANKING(*a, **k).transform(rewrite)

    def repeated(*a: Any, **k: Any) -> exp.Expression:
        return REAL_REPEATED(*a, **k).transform(rewrite)

    return {"ranking_select": ranking, "repeated_select": repeated}


def _no_tiebreak(d: Dedupe, t: str | None = None) -> list[exp.Ordered]:
    return REAL_ORDER_TERMS(d, t)[:-2]  # ties left to the engine's physical order


def _lineage_desc(d: Dedupe, t: str | None = None) -> list[exp.Ordered]:
    terms = REAL_ORDER_TERMS(d, t)
    for o in terms[-2:]:
        o.set("desc", True)  # ties broken by the newest line instead of the first
    return terms


def _nulls_first(d: Dedupe, t: str | None = None) -> list[exp.Ordered]:
    terms = REAL_ORDER_TERMS(d, t)
    for o in terms:
        o.set("nulls_first", True)  # a NULL ingested_at would win
    return terms


def _corrupt_ranked(node: exp.Expression) -> exp.Expression:
    is_not_corrupt = (
        isinstance(node, exp.Not)
        and isinstance(node.this, exp.Column)
        and node.this.name == "_corrupt"
    )
    return exp.true() if is_not_corrupt else node  # corrupt records take part


def _null_keys_equal(node: exp.Expression) -> exp.Expression:
    if isinstance(node, exp.Not) and isinstance(node.this, exp.Is):
        return exp.true()  # NULL key parts are not excluded …
    if isinstance(node, exp.EQ):  # … and compare equal
        return exp.NullSafeEQ(this=node.this, expression=node.expression)
    return node


def _wrong_kept(node: exp.Expression) -> exp.Expression:
    return exp.LastValue(this=node.this) if isinstance(node, exp.FirstValue) else node


def _mismatch_skipped(*a: Any, **k: Any) -> exp.Expression:
    # a resent bad row would not be a duplicate
    return REAL_RANKING(*a, **k).where(exp.Not(this=exp.column("_mismatch", "_t")))


MUTANTS = {
    "no_lineage_tiebreak": {"order_terms": _no_tiebreak},
    "lineage_desc": {"order_terms": _lineage_desc},
    "nulls_first": {"order_terms": _nulls_first},
    "corrupt_ranked": _rewritten(_corrupt_ranked),
    "null_keys_equal": _rewritten(_null_keys_equal),
    "mismatch_skipped": {"ranking_select": _mismatch_skipped},
    "wrong_kept_lineage": _rewritten(_wrong_kept),
}


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_mutant_disagrees_with_the_oracle(name, monkeypatch):
    rows = make_rows()
    want = oracle(rows)
    for attr, mutant in MUTANTS[name].items():
        monkeypatch.setattr(dedupe_c, attr, mutant)
    assert any(ranked(rows, seed) != want for seed in (1, 2, 3)), f"mutant {name} survived"


# -- end to end: the duplicates ledger ----------------------------------------------------

COLS = {
    "sale_id": "VARCHAR",
    "qty": "INTEGER",
    "ingested_at": {"type": "TIMESTAMP", "formats": ["%Y-%m-%dT%H:%M:%SZ"]},
}


def feed(root: Path, first: str = "a", second: str = "b") -> None:
    write_lines(
        root / "data" / f"{first}.json",
        [
            b'{"sale_id":"S1","qty":1,"ingested_at":"2024-01-01T00:00:00Z"}',  # 1: S1 older
            b'{"sale_id":"S2","qty":2,"ingested_at":"2024-01-01T00:00:00Z"}',  # 2: S2 kept
            b'{"sale_id":"S3","qty":"bad","ingested_at":"2024-01-01T00:00:00Z"}',  # 3: mismatch
            b'{"sale_id":null,"qty":4}',  # 4: NULL key
            b"garbage",  # 5: corrupt
            b'{"sale_id":"S5","qty":5}',  # 6: no ingested_at
        ],
    )
    write_lines(
        root / "data" / f"{second}.json",
        [
            b'{"sale_id":"S1","qty":9,"ingested_at":"2024-01-02T00:00:00Z"}',  # 1: S1 newer
            b'{"sale_id":"S2","qty":2,"ingested_at":"2024-01-01T00:00:00Z"}',  # 2: S2 exact copy
            b'{"sale_id":"S3","qty":"bad","ingested_at":"2024-01-01T00:00:00Z"}',  # 3: resent bad
            b'{"sale_id":null,"qty":4}',  # 4: NULL key again
            b"garbage",  # 5: corrupt again
            b'{"sale_id":"S5","qty":6,"ingested_at":"2023-01-01T00:00:00Z"}',  # 6: wins (NULLS LAST)
        ],
    )


def test_duplicates_carry_the_kept_rows_lineage_and_reruns_keep_them(tmp_path):
    feed(tmp_path)
    write_contract(
        tmp_path,
        columns=COLS,
        rules=[],
        dedupe={"key": ["sale_id"], "order_by": ["ingested_at DESC"]},
    )
    r = run(tmp_path)
    check_ledger(r, 12)
    assert placement(tmp_path) == {
        ("a.json", 1): "duplicate",
        ("b.json", 1): "clean",
        ("a.json", 2): "clean",  # exact copies: the first by file, line
        ("b.json", 2): "duplicate",
        ("a.json", 3): "type_mismatch",  # a resent bad row is still a duplicate
        ("b.json", 3): "duplicate",
        ("a.json", 4): "clean",  # NULL keys are never duplicates of each other
        ("b.json", 4): "clean",
        ("a.json", 5): "corrupt_record",  # corrupt lines have no key
        ("b.json", 5): "corrupt_record",
        ("a.json", 6): "duplicate",  # a NULL ingested_at sorts last
        ("b.json", 6): "clean",
    }
    dups = {
        (Path(d["_source_file"]).name, d["_source_line"]): (
            Path(d["_kept_source_file"]).name,
            d["_kept_source_line"],
        )
        for d in fetch(tmp_path, "SELECT * FROM dups")
    }
    assert dups == {
        ("a.json", 1): ("b.json", 1),
        ("b.json", 2): ("a.json", 2),
        ("b.json", 3): ("a.json", 3),
        ("a.json", 6): ("b.json", 6),
    }
    assert r.metrics["ledger"]["duplicates"] == 4
    snapshot = [
        fetch(tmp_path, f"SELECT * EXCLUDE (_dlq_timestamp) FROM {t} ORDER BY ALL")
        if t == "dlq"
        else fetch(tmp_path, f"SELECT * FROM {t} ORDER BY ALL")
        for t in ("clean", "dlq", "dups")
    ]
    run(tmp_path)  # same date, same input: the same run, the same tables
    again = [
        fetch(tmp_path, f"SELECT * EXCLUDE (_dlq_timestamp) FROM {t} ORDER BY ALL")
        if t == "dlq"
        else fetch(tmp_path, f"SELECT * FROM {t} ORDER BY ALL")
        for t in ("clean", "dlq", "dups")
    ]
    assert again == snapshot


def test_the_tie_break_follows_the_path_order_not_the_content(tmp_path):
    feed(tmp_path, first="b", second="a")  # the same lines, files swapped by name
    write_contract(
        tmp_path,
        columns=COLS,
        rules=[],
        dedupe={"key": ["sale_id"], "order_by": ["ingested_at DESC"]},
    )
    run(tmp_path)
    where = placement(tmp_path)
    assert where[("b.json", 2)] == "duplicate" and where[("a.json", 2)] == "clean"


def test_corrupt_lines_skip_dedupe_even_on_a_partition_key(tmp_path):
    write_lines(tmp_path / "d" / "month=2024-01" / "x.json", [b"garbage", b"garbage", b'{"id":1}'])
    write_contract(
        tmp_path,
        path="d",
        columns={"id": "BIGINT"},
        rules=[],
        dedupe={"key": ["month"]},
        source={"partitions": ["month"]},
    )
    check_ledger(run(tmp_path), 3)
    assert placement(tmp_path) == {
        ("x.json", 1): "corrupt_record",
        ("x.json", 2): "corrupt_record",
        ("x.json", 3): "clean",
    }


def test_rescued_data_follows_a_duplicate(tmp_path):
    feed(tmp_path)
    write_contract(tmp_path, columns=COLS, rules=[], dedupe={"key": ["sale_id"]})
    run(tmp_path)
    bad = [d for d in fetch(tmp_path, "SELECT * FROM dups") if d["sale_id"] == "S3"]
    assert [json.loads(d["_rescued_data"]) for d in bad] == [{"qty": "bad"}]


def test_a_run_keeps_the_repeated_keys_as_a_table_and_ranks_from_it(tmp_path):
    """The run materializes the repeated keys before ranking (on Spark their known size
    makes the join a broadcast: tests/engines/spark/test_spark_dedupe_plan.py)."""
    from tests.engines.test_publish import feed as rows_feed
    from tests.engines.test_publish import govern_contract, run, write_rows

    contract = govern_contract(tmp_path, engine="duckdb")
    write_rows(tmp_path / "data.json", rows_feed(300, bad=5, dups=20))
    result = run(contract, engine_name="duckdb", engine_options={"profile": True})
    assert result.exit_code == 0, result.metrics.get("error")
    assert result.metrics["ledger"]["duplicates"] == 20
    dedupe = [p["sql"] for p in result.metrics["profile"] if p["stage"] == "dedupe"]
    made = [i for i, s in enumerate(dedupe) if 'TABLE "_sg_repeated"' in s]
    ranked = [i for i, s in enumerate(dedupe) if 'TABLE "_sg_ranking"' in s]
    assert made and ranked and made[0] < ranked[0], dedupe
