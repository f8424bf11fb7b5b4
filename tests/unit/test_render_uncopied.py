"""DuckDB statements are rendered without sqlglot's copy of the tree (compile/render.py).

The test suite sets ``SLUICEGATE_VERIFY_RENDER`` (tests/conftest.py), so every DuckDB
render of every test checks that rendering left its tree as it was. These tests show the
check bites, and that Spark still renders from a copy.
"""

from __future__ import annotations

import pytest
import sqlglot

from sluicegate.compile.render import VERIFY_ENV, render


def test_the_suite_checks_every_duckdb_render():
    import os

    assert os.environ.get(VERIFY_ENV), "tests/conftest.py must turn the render check on"


def test_a_render_that_changes_its_tree_is_an_error(monkeypatch):
    """sqlglot's DuckDB generator rewrites SELECT … INTO into a CREATE TABLE, changing the
    tree it was given: rendered uncopied, the same tree would render differently twice."""
    monkeypatch.setenv(VERIFY_ENV, "1")
    tree = sqlglot.parse_one("SELECT a INTO t FROM b", read="duckdb")
    with pytest.raises(AssertionError, match="rendering changed the tree"):
        render(tree, "duckdb")


def test_without_the_check_the_render_is_the_copying_render(monkeypatch):
    monkeypatch.delenv(VERIFY_ENV, raising=False)
    text = "SELECT a, COUNT(*) AS n FROM t WHERE b > 1 GROUP BY a"
    tree = sqlglot.parse_one(text, read="duckdb")
    assert render(tree, "duckdb") == tree.sql("duckdb") == text


def test_spark_renders_from_a_copy(monkeypatch):
    monkeypatch.setenv(VERIFY_ENV, "1")
    tree = sqlglot.parse_one("SELECT a INTO t FROM b", read="duckdb")
    first = render(tree, "spark")
    assert render(tree, "spark") == first  # the tree was not changed
