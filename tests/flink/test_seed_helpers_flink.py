"""The seed helpers on Flink SQL (batch), reconciled with the Python oracle.

Runs in the separate PyFlink venv (scripts/flink_venv.sh). The same
reconciliation as the DuckDB and Spark tests is used, and two mutants show
that it can fail on Flink too.
"""

from __future__ import annotations

import pytest
from flink_runner import quoted
from seedcheck import EDGE_CASES, Helpers, oracle, reconcile, run_pipeline
from sqlglot import exp

import sluicegate.sql as seed_sql
from sluicegate.sql import routing, star_schema
from sluicegate.sql.flink_dialect import FLINK_RESERVED_WORDS
from sluicegate.sql.render import render, resolve_dialect

pytestmark = pytest.mark.flink

REAL = Helpers(
    good=seed_sql.good_orders_select,
    quarantine=seed_sql.quarantine_select,
    dim=seed_sql.dim_scd2_select,
    fct=seed_sql.fct_orders_select,
)


def _problems(runner, helpers: Helpers = REAL, **kwargs) -> list[str]:
    actual = run_pipeline(runner, helpers, EDGE_CASES, **kwargs)
    return reconcile(EDGE_CASES.orders_raw, actual, oracle(EDGE_CASES))


@pytest.mark.parametrize("dialect", [None, "flink"], ids=["portable", "flink"])
def test_helpers_reconcile_on_flink(flink_runner, dialect: str | None) -> None:
    assert _problems(flink_runner, dialect=dialect) == []


@pytest.mark.parametrize("dialect", [None, "flink"], ids=["portable", "flink"])
def test_qualified_names_on_flink(flink_runner, dialect: str | None) -> None:
    names = {
        key: f"default_catalog.default_database.{key}_q"
        for key in ("orders_raw", "customers", "cust_cdc", "good_orders", "dim_customer")
    }
    assert _problems(flink_runner, dialect=dialect, names=names) == []


def test_reserved_word_names_work_when_rendered_for_flink(flink_runner) -> None:
    names = {"orders_raw": "raw", "customers": "user", "cust_cdc": "value", "good_orders": "order"}
    assert _problems(flink_runner, dialect="flink", names=names) == []


def _mutant(builder, transform):
    def helper(*names: str, dialect: str | None = None) -> str:
        return render(transform(builder(*names, dialect=dialect)), resolve_dialect(dialect))

    return helper


def _lte_valid_to(tree: exp.Select) -> exp.Expression:
    return tree.transform(
        lambda n: exp.LTE(this=n.this, expression=n.expression) if isinstance(n, exp.LT) else n
    )


@pytest.mark.parametrize(
    ("slot", "mutant", "phrase"),
    [
        (
            "quarantine",
            _mutant(routing.quarantine_expression, lambda t: t.where("1 = 0", append=False)),
            "silent drop",
        ),
        ("fct", _mutant(star_schema.fct_orders_expression, _lte_valid_to), "more than one version"),
    ],
    ids=["silent_drop", "lte_on_valid_to"],
)
def test_reconciliation_catches_mutants_on_flink(flink_runner, slot, mutant, phrase) -> None:
    problems = _problems(flink_runner, REAL._replace(**{slot: mutant}))
    assert any(phrase in problem for problem in problems), problems


def test_reserved_word_list_matches_the_planner(t_env) -> None:
    """FLINK_RESERVED_WORDS came from Flink 2.3's parser; re-check it on the running planner."""
    not_rejected = []
    for word in sorted(FLINK_RESERVED_WORDS):
        t_env.sql_query(f"SELECT 1 AS {quoted(word)}")  # quoted: always fine
        try:
            t_env.sql_query(f"SELECT {word}.x FROM (SELECT 1 AS x) AS {word}")
        except Exception:  # noqa: BLE001 - any planner error means "reserved"
            continue
        not_rejected.append(word)
    assert not_rejected == []
    for word in ("name", "tier", "reason", "first", "last", "data", "session"):
        t_env.sql_query(f"SELECT {word}.x FROM (SELECT 1 AS x) AS {word}")
