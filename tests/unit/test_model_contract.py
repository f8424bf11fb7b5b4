"""The ``model:`` section: shape and meaning checked at load time, each problem located."""

from __future__ import annotations

import textwrap

import pytest

from sluicegate.compile.contract_check import load_contract
from sluicegate.errors import ContractError

BASE = """
name: shop
source:
  path: ./orders.json
  columns:
    oid: {type: BIGINT, nullable: false}
    cid: INTEGER
    amt: DECIMAL(10,2)
    ots: TIMESTAMP
    day: DATE
    code: VARCHAR
references:
  cdc:
    path: ./cdc.json
    columns: {cid: INTEGER, eff: TIMESTAMP, tier: VARCHAR, region: VARCHAR, note: VARCHAR}
outputs:
  warehouse: ./wh.duckdb
  clean: clean
  quarantine: dlq
  export: ./export
"""

MODEL = """
model:
  dimensions:
    dim_customer:
      reference: cdc
      key: cid
      effective: eff
      attributes: [tier, region]
  facts:
    fct_orders:
      derive: {amount: amt * 2}
      joins:
        - {dimension: dim_customer, on: cid, as_of: ots}
  marts:
    mart_tier: |
      SELECT tier, sum(amount) AS revenue FROM fct_orders GROUP BY tier
"""


def load(tmp_write, model: str = MODEL, base: str = BASE):
    return load_contract(tmp_write("c.yml", base + textwrap.dedent(model)))


def problems(tmp_write, model: str, base: str = BASE) -> list:
    with pytest.raises(ContractError) as ei:
        load(tmp_write, model, base)
    return ei.value.problems


def test_good_model_loads(tmp_write):
    c = load(tmp_write).contract
    assert c.model.dimensions["dim_customer"].key == ["cid"]
    j = c.model.facts["fct_orders"].joins[0]
    assert (j.on, j.on_missing, j.name) == (["cid"], "unknown_member", "dim_customer")
    assert c.model.marts["mart_tier"].sql.startswith("SELECT tier")
    assert c.model.table_names() == ["dim_customer", "fct_orders", "mart_tier"]


@pytest.mark.parametrize(
    ("old", "new", "path", "message", "suggestion"),
    [
        ("reference: cdc", "reference: cdd", "model.dimensions.dim_customer.reference", "unknown reference", "cdc"),
        ("key: cid", "key: cdi", "model.dimensions.dim_customer.key[0]", "no column 'cdi'", "cid"),
        ("effective: eff", "effective: tier", "model.dimensions.dim_customer.effective", "integer, DATE or TIMESTAMP", None),
        ("[tier, region]", "[tier, regoin]", "model.dimensions.dim_customer.attributes[1]", "no column 'regoin'", "region"),
        ("[tier, region]", "[tier, cid]", "model.dimensions.dim_customer.attributes[1]", "not an attribute", None),
        ("dimension: dim_customer,", "dimension: dim_custmer,", "model.facts.fct_orders.joins[0].dimension", "unknown dimension", "dim_customer"),
        ("on: cid,", "on: cod,", "model.facts.fct_orders.joins[0].on[0]", "unknown column 'cod'", "code"),
        ("on: cid,", "on: code,", "model.facts.fct_orders.joins[0].on[0]", "cannot match key", None),
        ("as_of: ots", "as_of: day", "model.facts.fct_orders.joins[0].as_of", "both must be", None),
        ("as_of: ots", "as_of: otss", "model.facts.fct_orders.joins[0].as_of", "unknown column 'otss'", "ots"),
        ("amt * 2", "amnt * 2", "model.facts.fct_orders.derive", "unknown column 'amnt'", "amt"),
        ("sum(amount)", "sum(amuont)", "model.marts.mart_tier", "unknown column 'amuont'", "amount"),
        ("FROM fct_orders GROUP", "FROM fct_order GROUP", "model.marts.mart_tier", "unknown table 'fct_order'", "fct_orders"),
        ("sum(amount) AS revenue", "sum(amount)", "model.marts.mart_tier", "needs a name", None),
    ],
)  # fmt: skip
def test_located_model_errors(tmp_write, old, new, path, message, suggestion):
    assert old in MODEL
    ps = problems(tmp_write, MODEL.replace(old, new))
    (p,) = [p for p in ps if p.path == path]
    assert message in p.message
    assert p.suggestion == suggestion
    assert p.line is not None and p.line > BASE.count("\n")


def test_misspelt_model_key_suggests(tmp_write):
    ps = problems(tmp_write, MODEL.replace("effective:", "efective:"))
    (p,) = [p for p in ps if p.path == "model.dimensions.dim_customer.efective"]
    assert p.suggestion == "effective"


def test_on_missing_is_an_enum(tmp_write):
    (p,) = problems(tmp_write, MODEL.replace("as_of: ots}", "as_of: ots, on_missing: drop}"))
    assert p.path.startswith("model.facts.fct_orders.joins.0.on_missing") or "on_missing" in p.path
    assert "unknown_member" in p.message and "quarantine" in p.message


def test_mart_cycle_is_a_contract_error(tmp_write):
    model = MODEL + "    mart_a: SELECT x AS x FROM mart_b\n    mart_b: SELECT x AS x FROM mart_a\n"
    ps = problems(tmp_write, model)
    assert any("cycle" in p.message and p.path.startswith("model.marts.") for p in ps)


def test_model_table_names_must_not_clash(tmp_write):
    ps = problems(tmp_write, MODEL.replace("dim_customer:\n", "clean:\n", 1))
    assert any(p.path == "model.dimensions.clean" and "output table" in p.message for p in ps)
    with pytest.raises(ContractError) as ei:
        load(tmp_write, MODEL + "    fct_orders: SELECT 1 AS one FROM dim_customer\n")
    assert "unique" in str(ei.value) or "both" in str(ei.value)


def test_attribute_clash_needs_a_prefix(tmp_write):
    base = BASE.replace("code: VARCHAR", "tier: VARCHAR")
    ps = problems(tmp_write, MODEL, base)
    assert any("duplicate columns tier" in p.message for p in ps)
    ok = (
        MODEL.replace("as_of: ots}", "as_of: ots, prefix: cust_}")
        .replace("SELECT tier,", "SELECT cust_tier AS tier,")
        .replace("GROUP BY tier", "GROUP BY 1")
    )
    load(tmp_write, ok, base)


def test_export_time_must_be_a_date_or_timestamp(tmp_write):
    ps = problems(tmp_write, MODEL.replace("derive:", "export: {time: oid}\n      derive:"))
    assert any(p.path == "model.facts.fct_orders.export.time" for p in ps)
    ps = problems(
        tmp_write,
        MODEL.replace("derive:", "export: true\n      derive:"),
        BASE.replace("  export: ./export\n", ""),
    )
    assert any("needs a path" in p.message for p in ps)


def test_every_problem_is_reported_at_once(tmp_write):
    bad = MODEL.replace("reference: cdc", "reference: nope").replace("as_of: ots", "as_of: zz")
    ps = problems(tmp_write, bad)
    assert {p.path for p in ps} >= {
        "model.dimensions.dim_customer.reference",
        "model.facts.fct_orders.joins[0].as_of",
    }
