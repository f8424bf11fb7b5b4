"""Engine-free checks of the helpers' SQL text: names, dialects, shape, doctests."""

from __future__ import annotations

import doctest
import importlib
from pathlib import Path

import pytest
import sqlglot
from sqlglot import exp

import sluicegate.sql as seed_sql
from sluicegate.sql.flink_dialect import Flink

TWO_TABLES = [seed_sql.good_orders_select, seed_sql.quarantine_select, seed_sql.fct_orders_select]
ALL = [*TWO_TABLES, seed_sql.dim_scd2_select]


def _call(helper, name: str, dialect: str | None) -> str:
    names = (name,) if helper is seed_sql.dim_scd2_select else (name, "other_table")
    return helper(*names, dialect=dialect)


@pytest.mark.parametrize("helper", ALL, ids=lambda h: h.__name__)
def test_portable_body_has_no_quoting(helper) -> None:
    sql = _call(helper, "cat.db.some_table", None)
    assert '"' not in sql and "`" not in sql
    assert "cat.db.some_table AS" in sql


@pytest.mark.parametrize("dialect", ["duckdb", "spark", "flink", "DuckDB", " Spark "])
@pytest.mark.parametrize("helper", ALL, ids=lambda h: h.__name__)
def test_dialect_rendering_round_trips(helper, dialect: str) -> None:
    sql = _call(helper, "cat.db.some_table", dialect)
    read = Flink if dialect.strip().lower() == "flink" else dialect.strip().lower()
    parsed = sqlglot.parse_one(sql, read=read)
    assert parsed.find(exp.Table).catalog == "cat"


def test_unknown_dialect_suggests_the_closest() -> None:
    with pytest.raises(ValueError, match="Did you mean 'duckdb'"):
        seed_sql.dim_scd2_select("t", dialect="duckbd")
    with pytest.raises(ValueError, match="expected one of duckdb, spark, flink"):
        seed_sql.dim_scd2_select("t", dialect="postgres")


@pytest.mark.parametrize(
    "name", ["order", "raw", "value", "user", "system.session.t", "my table", "x; DROP TABLE y"]
)
def test_names_without_a_portable_spelling_are_refused(name: str) -> None:
    with pytest.raises(ValueError, match="no portable spelling"):
        seed_sql.dim_scd2_select(name)


@pytest.mark.parametrize("name", ["order", "raw", "x; DROP TABLE y"])
def test_dialect_rendering_quotes_any_name_as_one_identifier(name: str) -> None:
    for dialect, quote in (("duckdb", '"'), ("spark", "`"), ("flink", "`")):
        sql = seed_sql.dim_scd2_select(name, dialect=dialect)
        assert f"FROM {quote}{name}{quote} AS" in sql
        assert len(sqlglot.parse(sql, read=Flink if dialect == "flink" else dialect)) == 1


@pytest.mark.parametrize("name", ["", "   ", "t(1)", "a.b.c.d"])
def test_non_table_names_are_refused(name: str) -> None:
    with pytest.raises(ValueError):
        seed_sql.dim_scd2_select(name)


def test_quoted_plain_names_render_portably() -> None:
    assert "FROM cust_cdc AS s" in seed_sql.dim_scd2_select("`cust_cdc`")


def test_output_columns_are_the_seeds() -> None:
    def columns(sql: str) -> list[str]:
        return sqlglot.parse_one(sql, read=Flink).named_selects

    assert columns(seed_sql.good_orders_select("r", "c")) == ["oid", "cid", "amt", "ots"]
    assert columns(seed_sql.quarantine_select("r", "c")) == ["oid", "reason"]
    assert columns(seed_sql.dim_scd2_select("s")) == [
        "cid", "name", "tier", "valid_from", "valid_to", "is_current",
    ]  # fmt: skip
    assert columns(seed_sql.fct_orders_select("o", "d")) == ["oid", "cid", "amt", "tier"]


def test_shape_follows_the_seeds() -> None:
    good = seed_sql.good_orders_select("r", "c")
    quarantine = seed_sql.quarantine_select("r", "c")
    assert "(SELECT DISTINCT k.cid FROM c AS k)" in good
    assert "LEFT JOIN (SELECT DISTINCT k.cid FROM c AS k)" in quarantine
    # The quarantine WHERE is literally NOT (the good WHERE).
    good_where = sqlglot.parse_one(good, read=Flink).args["where"].this
    quarantine_where = sqlglot.parse_one(quarantine, read=Flink).args["where"].this
    assert quarantine_where == exp.not_(exp.paren(good_where))
    fct = seed_sql.fct_orders_select("o", "d")
    assert "is_current" not in fct
    assert "o.ots >= d.valid_from AND o.ots < d.valid_to" in fct
    dim = seed_sql.dim_scd2_select("s")
    assert (
        f"COALESCE(LEAD(s.eff) OVER (PARTITION BY s.cid ORDER BY s.eff NULLS FIRST), {seed_sql.SENTINEL})"
        in dim
    )
    assert seed_sql.SENTINEL == 2**63 - 1


@pytest.mark.parametrize(
    "module",
    [
        "sluicegate.sql",
        "sluicegate.sql.render",
        "sluicegate.sql.routing",
        "sluicegate.sql.star_schema",
        "sluicegate.sql.flink_dialect",
    ],
)
@pytest.mark.duckdb
def test_docstring_examples_run(module: str) -> None:
    pytest.importorskip("duckdb")  # the routing and SCD2 examples run on DuckDB
    result = doctest.testmod(
        importlib.import_module(module), optionflags=doctest.NORMALIZE_WHITESPACE
    )
    assert result.failed == 0 and result.attempted > 0


def test_doc_examples_are_current() -> None:
    doc = Path(__file__).resolve().parents[2] / "docs" / "seed-helpers.md"
    result = doctest.testfile(
        str(doc), module_relative=False, optionflags=doctest.NORMALIZE_WHITESPACE
    )
    assert result.failed == 0 and result.attempted > 0
