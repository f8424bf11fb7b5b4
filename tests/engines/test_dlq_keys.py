"""The engines' canonical JSON and DLQ key against the pinned vector and pure Python.

DuckDB (with the ``sg_xxhash64`` UDF the engine registers) and Spark (native
``xxhash64``) must both produce the vector's exact text and key from typed values.
"""

from __future__ import annotations

import json

import duckdb
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from sqlglot import exp

from sluicegate.compile.contract_check import load_contract
from sluicegate.compile.render import ident, lit, render
from sluicegate.dlq.canonical import json_string, json_value, row_json
from sluicegate.dlq.keys import dlq_key
from sluicegate.engines import open_engine
from tests.unit.test_dlq_canonical import (
    EXPECTED_JSON,
    EXPECTED_KEY,
    ROW,
    SOURCE_TABLE,
    TYPES,
    reference_value,
)

LINEAGE_TYPES = {"_source_file": "VARCHAR", "_source_line": "BIGINT", "_logical_date": "DATE"}


@pytest.fixture
def vector_contract(tmp_path):
    cols = "\n".join(f"    {n}: {t}" for n, t in TYPES.items())
    path = tmp_path / "c.yml"
    path.write_text(
        f"name: vec\nsource:\n  name: {SOURCE_TABLE}\n  path: x.json\n  columns:\n{cols}\n"
        "outputs: {warehouse: w.duckdb, clean: c, quarantine: q}\n",
        encoding="utf-8",
    )
    return load_contract(path, logical_date="2024-03-05").contract


def typed_row() -> exp.Select:
    """The vector's row as typed SQL literals (the same tree renders for each engine)."""
    items = []
    for name, sql_type in {**TYPES, **LINEAGE_TYPES}.items():
        v = ROW[name]
        if v is None:
            value = exp.cast(exp.null(), sql_type)
        elif isinstance(v, bool):
            value = exp.true() if v else exp.false()
        else:
            text = str(v)  # datetime → "2024-03-05 10:11:12", date → "2024-03-05"
            value = exp.cast(lit(text), sql_type)
        items.append(exp.alias_(value, ident(name)))
    return exp.select(*items)


def vector_query(contract, dialect: str) -> exp.Select:
    j = row_json(contract, [], dialect, "_v")
    return exp.select(
        exp.alias_(j, ident("j")), exp.alias_(dlq_key(SOURCE_TABLE, j.copy(), dialect), ident("k"))
    ).from_(exp.Subquery(this=typed_row(), alias=exp.TableAlias(this=ident("_v"))))


@pytest.mark.duckdb
def test_duckdb_reproduces_the_vector(vector_contract):
    eng = open_engine("duckdb", ":memory:")
    try:
        ((j, k),) = eng.fetch(vector_query(vector_contract, "duckdb"))
    finally:
        eng.close()
    assert j == EXPECTED_JSON
    assert k == EXPECTED_KEY


@pytest.mark.spark
def test_spark_xxhash64_reproduces_the_vector(vector_contract, spark):
    sql = render(vector_query(vector_contract, "spark"), "spark")
    ((j, k),) = [tuple(r) for r in spark.sql(sql).collect()]
    assert j == EXPECTED_JSON
    assert k == EXPECTED_KEY
    # Spark's own xxhash64 over the same string is the DuckDB key
    (row,) = spark.sql(
        render(exp.select(exp.func("xxhash64", lit(SOURCE_TABLE + EXPECTED_JSON))), "spark")
    ).collect()
    assert str(row[0]) == EXPECTED_KEY


TEXT = st.text(st.characters(blacklist_categories=("Cs",)), max_size=40)


@pytest.mark.duckdb
@settings(max_examples=60, deadline=None)
@given(st.lists(TEXT, min_size=1, max_size=30))
def test_duckdb_string_escaping_matches_python_json(texts):
    con = duckdb.connect()
    con.execute("CREATE TABLE s (i INTEGER, v VARCHAR)")
    con.executemany("INSERT INTO s VALUES (?, ?)", list(enumerate(texts)))
    q = exp.select(exp.column("i"), json_string(exp.column("v"), "duckdb")).from_("s").order_by("i")
    got = [r[1] for r in con.execute(render(q, "duckdb")).fetchall()]
    assert got == [json.dumps(t, ensure_ascii=False) for t in texts]
    assert [json.loads(g) for g in got] == texts


#: every one-character string below U+0100, and the texts of an escape that must stay
#: as they are: a backslash before ``u000B`` and before a control (DuckDB's short path
#: lower-cases its own escapes only, behind an escaped backslash too)
EDGE_TEXTS = [chr(i) for i in range(256)] + [
    r"\u000B",  # a backslash, then u000B
    r"\\u000B",  # two backslashes, then u000B
    "\\\x0b",  # a backslash, then the control
    "\x1f\\\x1f" + r"\u001F",
    "a\x01b" + r"\u0001c",
    "\u2028\u2029é😀",
]


@pytest.mark.duckdb
@pytest.mark.parametrize("dialect", ["duckdb", "spark"])
def test_string_escaping_edges_match_python_json(dialect):
    """Both forms of the JSON string (DuckDB's short one, the portable chain) run on DuckDB
    and agree with ``json.dumps`` on every control and around literal backslashes."""
    con = duckdb.connect()
    con.execute("CREATE TABLE s (i INTEGER, v VARCHAR)")
    con.executemany("INSERT INTO s VALUES (?, ?)", list(enumerate(EDGE_TEXTS)))
    q = exp.select(exp.column("i"), json_string(exp.column("v"), dialect)).from_("s").order_by("i")
    got = [r[1] for r in con.execute(render(q, "duckdb")).fetchall()]
    assert got == [json.dumps(t, ensure_ascii=False) for t in EDGE_TEXTS]


@pytest.mark.duckdb
@settings(max_examples=40, deadline=None)
@given(st.lists(st.floats(allow_nan=True, allow_infinity=True), min_size=1, max_size=40))
def test_duckdb_float_form_matches_c_formatting(values):
    con = duckdb.connect()
    con.execute("CREATE TABLE f (i INTEGER, v DOUBLE)")
    con.executemany("INSERT INTO f VALUES (?, ?)", list(enumerate(values)))
    q = exp.select(exp.column("i"), json_value(exp.column("v"), "float", "duckdb")).from_("f")
    got = [r[1] for r in con.execute(render(q.order_by("i"), "duckdb")).fetchall()]
    assert got == [reference_value(v, "float") for v in values]


@pytest.mark.duckdb
@settings(max_examples=30, deadline=None)
@given(st.lists(st.one_of(st.none(), TEXT), min_size=1, max_size=50))
def test_duckdb_udf_is_xxhash64_seed_42_signed(texts):
    import xxhash

    def want(t: str | None) -> int:
        if t is None:
            return 42  # Spark: xxhash64(NULL) is the seed
        u = xxhash.xxh64_intdigest(t.encode("utf-8"), seed=42)
        return u - (1 << 64) if u >= 1 << 63 else u

    eng = open_engine("duckdb", ":memory:")
    try:
        got = [
            eng.fetch(exp.select(exp.func("sg_xxhash64", exp.cast(lit(t), "VARCHAR"))))[0][0]
            for t in texts
        ]
    finally:
        eng.close()
    assert got == [want(t) for t in texts]


def test_duckdb_uses_its_own_json_writer_spark_the_portable_chain():
    """DuckDB's form is the short one (planning the 34-REPLACE chain per string column
    cost a publish ~40 ms); Spark keeps the chain it has always run."""
    duck = render(json_string(exp.column("v"), "duckdb"), "duckdb")
    spark = render(json_string(exp.column("v"), "spark"), "spark")
    assert "TO_JSON" in duck.upper() and duck.upper().count("REPLACE(") == 11
    assert "TO_JSON" not in spark.upper() and spark.upper().count("REPLACE(") == 34
