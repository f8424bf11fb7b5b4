"""Mutation tests: each classic mistake in a seed helper must fail reconciliation.

Each mutant is the real helper's sqlglot tree with one deliberate change (the
smallest edit that reproduces the bug), rendered exactly like the real helper.
Reconciliation must return no problem for the real helpers and at least one
problem -- of the expected kind -- for every mutant. If a mutant survives,
the checks in ``seedcheck`` are too weak to catch that bug.
"""

from __future__ import annotations

from collections.abc import Callable

import pytest
from runners import DuckDBRunner
from seedcheck import EDGE_CASES, SENTINEL, Helpers, oracle, reconcile, run_pipeline
from sqlglot import exp

from sluicegate.sql import routing, star_schema
from sluicegate.sql.render import render, resolve_dialect

pytestmark = pytest.mark.duckdb

Transform = Callable[[exp.Select], exp.Expression]


def _helper(builder: Callable[..., exp.Select], transform: Transform) -> Callable[..., str]:
    """A helper that renders ``transform(real tree)`` instead of the real tree."""

    def helper(*names: str, dialect: str | None = None) -> str:
        tree = builder(*names, dialect=dialect)
        return render(transform(tree), resolve_dialect(dialect))

    return helper


REAL = Helpers(
    good=_helper(routing.good_orders_expression, lambda tree: tree),
    quarantine=_helper(routing.quarantine_expression, lambda tree: tree),
    dim=_helper(star_schema.dim_scd2_expression, lambda tree: tree),
    fct=_helper(star_schema.fct_orders_expression, lambda tree: tree),
)


def _replace(node_type: type[exp.Expression], make: Callable[[exp.Expression], exp.Expression]):
    """A transform replacing every ``node_type`` node with ``make(node)``."""
    return lambda tree: tree.transform(
        lambda node: make(node) if isinstance(node, node_type) else node
    )


def _in_where(transform: Transform) -> Transform:
    """Apply ``transform`` to the WHERE clause only (not to the CASE)."""

    def apply(tree: exp.Select) -> exp.Select:
        tree = tree.copy()
        tree.set("where", transform(tree.args["where"]))
        return tree

    return apply


def _reorder_case(order: tuple[int, ...]) -> Transform:
    def apply(tree: exp.Select) -> exp.Select:
        tree = tree.copy()
        case = tree.find(exp.Case)
        case.set("ifs", [case.args["ifs"][i] for i in order])
        return tree

    return apply


def _not_distinct(tree: exp.Select) -> exp.Select:
    tree = tree.copy()
    for select in tree.find_all(exp.Select):
        select.set("distinct", None)
    return tree


def _quarantine_without_rule(reason: str) -> Transform:
    """Quarantine WHERE built from every rule but one: those rows vanish."""
    kept = [r.passes.copy() for r in routing.RULES if r.reason != reason]
    where = exp.not_(exp.paren(exp.and_(*(exp.paren(p) for p in kept))))
    return lambda tree: tree.where(where, append=False)


def _only_newest(tree: exp.Select) -> exp.Select:
    """Overwrite instead of versioning: each customer keeps its latest row only."""
    return tree.where(
        exp.EQ(this=exp.column("valid_to", "v"), expression=exp.Literal.number(SENTINEL))
    )


def _join_on_is_current(tree: exp.Select) -> exp.Select:
    tree = tree.copy()
    join = tree.args["joins"][0]
    join.set(
        "on",
        exp.and_(
            exp.EQ(this=exp.column("cid", "o"), expression=exp.column("cid", "d")),
            exp.EQ(this=exp.column("is_current", "d"), expression=exp.true()),
        ),
    )
    return tree


def _is_current_alias(make: Callable[[], exp.Expression]) -> Transform:
    def apply(tree: exp.Select) -> exp.Select:
        tree = tree.copy()
        for alias in tree.expressions:
            if alias.alias == "is_current":
                alias.set("this", make())
        return tree

    return apply


# name -> (helper slot, builder, transform, a phrase the problems must contain)
MUTANTS: dict[str, tuple[str, Callable[..., exp.Select], Transform, str]] = {
    # --- seed 000: routing
    "silent_drop_quarantine_empty": (
        "quarantine",
        routing.quarantine_expression,
        lambda tree: tree.where("1 = 0", append=False),
        "silent drop",
    ),
    "silent_drop_unknown_customer_not_routed": (
        "quarantine",
        routing.quarantine_expression,
        _quarantine_without_rule("unknown_customer"),
        "silent drop",
    ),
    "silent_drop_good_threshold_drifted": (
        "good",
        routing.good_orders_expression,
        _replace(exp.GT, lambda n: exp.GT(this=n.this, expression=exp.Literal.number(1))),
        "silent drop",
    ),
    "overlap_good_accepts_zero_amount": (
        "good",
        routing.good_orders_expression,
        _replace(exp.GT, lambda n: exp.GTE(this=n.this, expression=n.expression)),
        "overlap",
    ),
    "overlap_quarantine_threshold_drifted": (
        "quarantine",
        routing.quarantine_expression,
        _in_where(
            _replace(exp.GT, lambda n: exp.GT(this=n.this, expression=exp.Literal.number(1)))
        ),
        "overlap",
    ),
    "mislabel_amount_before_null_customer": (
        "quarantine",
        routing.quarantine_expression,
        _reorder_case((1, 0, 2)),
        "quarantine differs",
    ),
    "mislabel_unknown_before_amount": (
        "quarantine",
        routing.quarantine_expression,
        _reorder_case((0, 2, 1)),
        "quarantine differs",
    ),
    "duplicate_customer_keys_multiply_orders": (
        "good",
        routing.good_orders_expression,
        _not_distinct,
        "multiplied",
    ),
    # --- seed 003: SCD2 dimension
    "overwrite_instead_of_versioning": (
        "dim",
        star_schema.dim_scd2_expression,
        _only_newest,
        "dim_customer differs",
    ),
    "old_versions_left_open": (
        "dim",
        star_schema.dim_scd2_expression,
        _replace(exp.Coalesce, lambda n: exp.Literal.number(SENTINEL)),
        "current versions",
    ),
    "all_versions_current": (
        "dim",
        star_schema.dim_scd2_expression,
        _is_current_alias(exp.true),
        "current versions",
    ),
    "lag_instead_of_lead": (
        "dim",
        star_schema.dim_scd2_expression,
        _replace(exp.Lead, lambda n: exp.Lag(this=n.this)),
        "dim_customer differs",
    ),
    # --- seed 003: as-of fact join
    "boundary_gt_on_valid_from": (
        "fct",
        star_schema.fct_orders_expression,
        _replace(exp.GTE, lambda n: exp.GT(this=n.this, expression=n.expression)),
        "fct_orders differs",
    ),
    "boundary_lte_on_valid_to": (
        "fct",
        star_schema.fct_orders_expression,
        _replace(exp.LT, lambda n: exp.LTE(this=n.this, expression=n.expression)),
        "more than one version",
    ),
    "join_on_is_current": (
        "fct",
        star_schema.fct_orders_expression,
        _join_on_is_current,
        "fct_orders differs",
    ),
}


SLOT_ARGS = {
    "good": ("orders_raw", "customers"),
    "quarantine": ("orders_raw", "customers"),
    "dim": ("cust_cdc",),
    "fct": ("good_orders", "dim_customer"),
}


def _problems(helpers: Helpers) -> list[str]:
    actual = run_pipeline(DuckDBRunner(), helpers, EDGE_CASES)
    return reconcile(EDGE_CASES.orders_raw, actual, oracle(EDGE_CASES))


def test_real_helpers_reconcile_through_the_mutant_harness() -> None:
    """The control: the harness itself must not report problems for the real SQL."""
    assert _problems(REAL) == []


@pytest.mark.parametrize("name", sorted(MUTANTS))
def test_mutant_is_killed(name: str) -> None:
    slot, builder, transform, phrase = MUTANTS[name]
    mutant = REAL._replace(**{slot: _helper(builder, transform)})
    args = SLOT_ARGS[slot]
    assert getattr(mutant, slot)(*args) != getattr(REAL, slot)(*args), "mutation changed nothing"
    problems = _problems(mutant)
    assert problems, f"mutant {name} survived reconciliation"
    assert any(phrase in problem for problem in problems), problems
