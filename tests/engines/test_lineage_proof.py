"""The ledger's lineage read-back (run/lineage_proof.py): the per-file bitmaps and the
grouped pairs give the same answer, and both equal a count taken here in Python."""

from __future__ import annotations

from collections import Counter

import pytest

from sluicegate.engines import open_engine
from sluicegate.run import lineage_proof

RUN = "r1"
TABLES = ["t_clean", "t_dlq", "t_dup"]


def _outputs(rows: dict[str, list[tuple[str, int, str]]]):
    """A DuckDB engine holding the three outputs: ``(file, line, run id)`` rows each."""
    eng = open_engine("duckdb", ":memory:")
    for table, content in rows.items():
        eng.con.execute(
            f"CREATE TABLE {table} (_source_file VARCHAR, _source_line BIGINT, _run_id VARCHAR)"
        )
        if content:
            eng.con.executemany(f"INSERT INTO {table} VALUES (?, ?, ?)", content)
    return eng


def _truth(rows: dict[str, list[tuple[str, int, str]]]) -> tuple[int, dict[str, int]]:
    """Extra copies and records per file, counted independently of any SQL."""
    mine = [(f, n) for content in rows.values() for f, n, r in content if r == RUN]
    per_pair = Counter(mine)
    return sum(c - 1 for c in per_pair.values()), dict(Counter(f for f, _n in mine))


def _written(rows: dict[str, list[tuple[str, int, str]]]) -> dict[str, int]:
    """Rows of this run in each table, counted in Python."""
    return {t: sum(1 for _f, _n, r in content if r == RUN) for t, content in rows.items()}


CASES = {
    "disjoint": {
        "t_clean": [("a.json", n, RUN) for n in range(1, 101)],
        "t_dlq": [("a.json", n, RUN) for n in range(101, 111)] + [("b.json", 3, RUN)],
        "t_dup": [("b.json", 1, RUN), ("b.json", 2, RUN)],
    },
    "overlapping": {  # 11 records in clean and quarantine, one line twice in duplicates
        "t_clean": [("a.json", n, RUN) for n in range(1, 101)],
        "t_dlq": [("a.json", n, RUN) for n in range(50, 61)],
        "t_dup": [("b.json", 7, RUN), ("b.json", 7, RUN), ("b.json", 7, RUN)],
    },
    "other runs ignored, offsets far from 1": {  # a Kafka-like lineage: large offsets
        "t_clean": [("topic/0", 10**12 + n, RUN) for n in range(5)]
        + [("topic/0", 10**12, "older")],
        "t_dlq": [("topic/1", 10**12 + 3, RUN)],
        "t_dup": [("topic/0", 10**12 + 4, RUN)],
    },
    "empty": {"t_clean": [], "t_dlq": [], "t_dup": []},
    "zero and negative lines, bucket edges": {  # every line its own bit, none shared
        "t_clean": [("a.json", n, RUN) for n in (-32769, -32768, -1, 0, 1, 32768, 32769)],
        "t_dlq": [("a.json", n, RUN) for n in (-32767, 2, 65536, 65537)],
        "t_dup": [("a.json", 32769, RUN), ("a.json", -32768, RUN)],  # two extra copies
    },
    "no line number": {  # never by construction; one group of two, as the pairs count it
        "t_clean": [("a.json", None, RUN), ("a.json", None, RUN), ("a.json", 5, RUN)],
        "t_dlq": [("b.json", None, RUN)],
        "t_dup": [],
    },
}


@pytest.mark.parametrize("case", list(CASES))
@pytest.mark.parametrize("budget", ["bitmaps", "pairs"])
def test_readback_equals_an_independent_count(case, budget, monkeypatch):
    rows = CASES[case]
    if budget == "pairs":  # no bitmap fits: the grouped pairs answer
        monkeypatch.setattr(lineage_proof, "BITMAP_BUDGET_BYTES", 0)
    eng = _outputs(rows)
    try:
        back = lineage_proof.output_readback(eng, TABLES, RUN)
    finally:
        eng.close()
    assert (back.extra, back.files) == _truth(rows)
    assert back.written == _written(rows)


def test_bitmaps_are_used_while_small_and_pairs_beyond(monkeypatch):
    """The budget decides: a long range times many files must not build bitmaps."""
    rows = {
        "t_clean": [(f"f{i}", 1, RUN) for i in range(10)] + [("f0", 10**6, RUN)],
        "t_dlq": [],
        "t_dup": [],
    }
    asked = []
    real = lineage_proof.ledger_c.lineage_bitmaps
    monkeypatch.setattr(
        lineage_proof.ledger_c,
        "lineage_bitmaps",
        lambda *a: asked.append(a) or real(*a),
    )
    monkeypatch.setattr(lineage_proof, "BITMAP_BUDGET_BYTES", 10**6)
    eng = _outputs(rows)
    try:
        # 10 files x 10**6 lines = 1.25 MB of bitmaps: over the budget, grouped instead
        assert lineage_proof.lineage_readback(eng, TABLES, RUN) == _truth(rows)
        assert asked == []
        monkeypatch.setattr(lineage_proof, "BITMAP_BUDGET_BYTES", 2 * 10**6)
        assert lineage_proof.lineage_readback(eng, TABLES, RUN) == _truth(rows)
        assert len(asked) == 1
    finally:
        eng.close()


@pytest.mark.spark
@pytest.mark.parametrize("query", ["lineage_bucket_bitmaps", "lineage_summary"])
@pytest.mark.parametrize("case", list(CASES))
def test_readback_queries_run_on_spark(case, query, spark):
    """Both Spark forms (the bucketed bitmaps a run uses, the grouped pairs any engine
    can run), rendered for Spark, run there and give the independent counts: per file,
    extra copies, per table."""
    from sluicegate.compile import ledger as ledger_c
    from sluicegate.compile.render import render

    rows = CASES[case]
    for table, content in rows.items():
        spark.createDataFrame(
            content, "_source_file string, _source_line bigint, _run_id string"
        ).createOrReplaceTempView(table)
    got = spark.sql(render(getattr(ledger_c, query)(TABLES, RUN), "spark")).collect()
    extra = sum(int(r[2]) for r in got)
    assert (extra, {r[0]: int(r[1]) for r in got}) == _truth(rows)
    assert {t: sum(int(r[3 + i]) for r in got) for i, t in enumerate(TABLES)} == _written(rows)


@pytest.mark.parametrize("case", ["disjoint", "overlapping"])
def test_fact_readback_counts_extra_copies_in_one_query(case):
    """The fact read-back's one-query form (Spark's), rendered and run on DuckDB here and
    on Spark below: fact rows, clean rows, and the fact's extra copies."""
    from sluicegate.compile.model import asof

    rows = CASES[case]
    eng = _outputs(rows)
    try:
        q = asof.fact_readback("t_clean", "t_dlq", RUN, extra_copies=True)
        got = tuple(int(v) for v in eng.fetch(q)[0])
    finally:
        eng.close()
    assert got == _fact_truth(rows)


def _fact_truth(rows) -> tuple[int, int, int]:
    fact = [(f, n) for f, n, r in rows["t_clean"] if r == RUN]
    clean = [1 for _f, _n, r in rows["t_dlq"] if r == RUN]
    return len(fact), len(clean), sum(c - 1 for c in Counter(fact).values())


@pytest.mark.spark
@pytest.mark.parametrize("bucketed", [True, False])
def test_fact_readback_counts_extra_copies_on_spark(spark, bucketed):
    from sluicegate.compile.model import asof
    from sluicegate.compile.render import render

    rows = {**CASES["overlapping"], "t_clean": CASES["overlapping"]["t_clean"] * 2}
    for table, content in rows.items():
        spark.createDataFrame(
            content, "_source_file string, _source_line bigint, _run_id string"
        ).createOrReplaceTempView(table)
    q = asof.fact_readback("t_clean", "t_dlq", RUN, extra_copies=True, bucketed=bucketed)
    got = tuple(int(v) for v in spark.sql(render(q, "spark")).collect()[0])
    assert got == _fact_truth(rows) and got[2] == 100
    # no run rows at all: the extra copies are 0, not NULL
    q = asof.fact_readback("t_clean", "t_dlq", "no-such-run", extra_copies=True, bucketed=bucketed)
    assert tuple(int(v) for v in spark.sql(render(q, "spark")).collect()[0]) == (0, 0, 0)


def _past_60():
    """A stand-in for an unknown-member flag: the fact rows of the run past line 60."""
    from sqlglot import exp

    past = exp.GT(this=exp.column("_source_line"), expression=exp.Literal.number(60))
    return exp.func(
        "SUM",
        exp.Case(
            ifs=[exp.If(this=past, true=exp.Literal.number(1))], default=exp.Literal.number(0)
        ),
    )


@pytest.mark.parametrize("engine_name", ["duckdb", pytest.param("spark", marks=pytest.mark.spark)])
@pytest.mark.parametrize("run", [RUN, "no-such-run"])
def test_fact_readback_carries_the_unknown_member_counts(engine_name, run, request):
    """The unknown-member sums ride on the fact read-back's one scan, after the other
    numbers, on both engines; a run without rows gives NULL sums (the caller's 0)."""
    from sluicegate.compile.model import asof
    from sluicegate.compile.render import render

    rows = {"t_clean": CASES["overlapping"]["t_clean"] * 2, "t_dlq": CASES["overlapping"]["t_dlq"]}
    q = asof.fact_readback(
        "t_clean", "t_dlq", run, extra_copies=True, unknown=[_past_60(), _past_60()]
    )
    if engine_name == "duckdb":
        eng = _outputs(rows)
        try:
            got = eng.fetch(q)[0]
        finally:
            eng.close()
    else:
        spark = request.getfixturevalue("spark")
        for table, content in rows.items():
            spark.createDataFrame(
                content, "_source_file string, _source_line bigint, _run_id string"
            ).createOrReplaceTempView(table)
        got = tuple(spark.sql(render(q, "spark")).collect()[0])
    past = sum(1 for _f, n, r in rows["t_clean"] if r == run and n > 60)
    want = (*_fact_truth(rows), past, past) if run == RUN else (0, 0, 0, None, None)
    assert tuple(None if v is None else int(v) for v in got) == want
    assert run != RUN or past == 80


def test_rows_without_a_line_number_are_not_waved_through():
    """Lineage is never NULL by construction; if it were, the rows must still be counted
    per file (the ledger compares those counts with the binding), not dropped."""
    rows = {"t_clean": [("a.json", None, RUN), ("a.json", None, RUN)], "t_dlq": [], "t_dup": []}
    eng = _outputs(rows)
    try:
        extra, files = lineage_proof.lineage_readback(eng, TABLES, RUN)
    finally:
        eng.close()
    assert files == {"a.json": 2} and extra == 1
