"""``sluicegate compile`` prints the model's statements, in run order, for each dialect."""

from __future__ import annotations

import textwrap

import pytest

from sluicegate.compile.contract_check import load_contract
from sluicegate.compile.plan import plan, render_plan
from tests.unit.test_model_contract import BASE, MODEL


@pytest.mark.parametrize("dialect", ["duckdb", "spark", "trino"])
def test_model_steps_follow_routing_and_publish(tmp_write, dialect: str):
    model = MODEL.replace("as_of: ots}", "as_of: ots, on_missing: quarantine}")
    loaded = load_contract(tmp_write("c.yml", BASE + textwrap.dedent(model)))
    steps = plan(loaded, dialect)
    names = [s.name for s in steps]
    routed = names.index("_sg_routed")
    # dimensions and the reroute before publish, then outputs, then the model tables
    assert names[routed + 1 : routed + 4] == [
        "_sg_dim_dim_customer",
        "_sg_routed_premodel",
        "_sg_routed",
    ]
    assert names.index("clean") > routed + 3
    assert names[-4:] == ["dim_customer", "fct_orders", "fct_orders", "mart_tier"]
    text = render_plan(steps, dialect)
    assert "9999-12-31 23:59:59" in text  # the timestamp sentinel
    assert "no_dimension_version:dim_customer" in text
    assert "exported to ./export/fct_orders/year=/month= by ots" in text


def test_no_model_no_model_steps(tmp_write):
    loaded = load_contract(tmp_write("c.yml", BASE))
    assert not [s for s in plan(loaded, "duckdb") if s.comment.startswith("model:")]
