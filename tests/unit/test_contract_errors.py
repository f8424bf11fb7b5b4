"""Contract errors name the file, the key path and the line, and suggest a fix."""

from __future__ import annotations

import pytest

from sluicegate.compile.contract_check import load_contract
from sluicegate.errors import ContractError
from tests.conftest import run_cli

GOOD = """
name: shop
vars: {root: ./data}
source:
  path: ${root}/orders.json
  columns:
    oid: {type: BIGINT, nullable: false}
    cid: INTEGER
    amt: DECIMAL(10,2)
references:
  customers: {path: ${root}/customers.json, columns: {cid: INTEGER}}
rules:
  - name: positive_amount
    expect: amt > 0
  - name: known_customer
    expect: cid IN (SELECT cid FROM customers)
outputs:
  warehouse: ${root}/wh.duckdb
  clean: clean
  quarantine: dlq
"""


def problems(text: str, tmp_write, **kw) -> list:
    path = tmp_write("c.yml", text)
    with pytest.raises(ContractError) as ei:
        load_contract(path, **kw)
    return ei.value.problems


def test_good_contract_loads_and_resolves_vars(tmp_write):
    loaded = load_contract(tmp_write("c.yml", GOOD), logical_date="2024-03-01")
    assert loaded.contract.source.path == "./data/orders.json"
    assert loaded.contract.outputs.duplicates == "shop_duplicates"  # the contract's own
    assert loaded.contract.gate.warn_above == 0.01 and loaded.contract.gate.fail_above == 0.05


def test_misspelt_top_level_key_names_line_and_suggests(tmp_write):
    (p,) = problems(GOOD.replace("rules:", "rulez:"), tmp_write)
    assert p.path == "rulez" and p.suggestion == "rules"
    assert p.line == 11


def test_misspelt_nested_key(tmp_write):
    (p,) = problems(GOOD.replace("nullable: false", "nulable: false"), tmp_write)
    assert p.path == "source.columns.oid.nulable"
    assert p.suggestion == "nullable" and p.line == 6


def test_unknown_rule_column_suggests_closest(tmp_write):
    (p,) = problems(GOOD.replace("expect: amt > 0", "expect: amount > 0"), tmp_write)
    assert p.path == "rules[0].expect" and p.suggestion == "amt"
    assert p.line == 13
    assert "unknown column 'amount'" in p.message


def test_wrong_type_and_missing_key(tmp_write):
    ps = problems(
        GOOD.replace("  clean: clean\n", "").replace("amt: DECIMAL(10,2)", "amt: MONEYS"), tmp_write
    )
    by_path = {p.path: p for p in ps}
    assert "outputs.clean" in by_path and "missing" in by_path["outputs.clean"].message
    assert "source.columns.amt.type" in by_path
    assert "MONEYS" in by_path["source.columns.amt.type"].message


def test_unknown_variable_is_located(tmp_write):
    (p,) = problems(GOOD.replace("${root}/orders.json", "${rooot}/orders.json"), tmp_write)
    assert p.path == "source.path" and p.line == 4 and "rooot" in p.message


def test_env_and_logical_date_tokens(tmp_write, monkeypatch):
    monkeypatch.setenv("SHOP_ROOT", "/srv/shop")
    text = GOOD.replace("${root}/orders.json", "${env:SHOP_ROOT}/${logical_date}/orders.json")
    loaded = load_contract(tmp_write("c.yml", text), logical_date="2024-03-01")
    assert loaded.contract.source.path == "/srv/shop/2024-03-01/orders.json"


def test_cli_var_wins_over_vars(tmp_write):
    loaded = load_contract(tmp_write("c.yml", GOOD), variables={"root": "/x"})
    assert loaded.contract.outputs.warehouse == "/x/wh.duckdb"


def test_secret_never_appears_in_errors(tmp_write, monkeypatch):
    monkeypatch.setenv("SLUICEGATE_SECRET_DB_PASSWORD", "hunter2")
    text = GOOD.replace(
        "warehouse: ${root}/wh.duckdb",
        "warehouse: ${secret:db/password}\n  bogus: ${secret:db/password}",
    )
    ps = problems(text, tmp_write)
    assert all("hunter2" not in p.message for p in ps)
    assert any(p.path == "outputs.bogus" for p in ps)


def test_cli_validate_exits_2_with_file_line_and_suggestion(tmp_write):
    path = tmp_write("c.yml", GOOD.replace("expect: amt > 0", "expect: amnt > 0"))
    r = run_cli("validate", str(path))
    assert r.returncode == 2
    assert f"{path}:13" in r.stderr and "did you mean 'amt'" in r.stderr
    assert "Traceback" not in r.stderr


def test_cli_validate_ok(tmp_write):
    r = run_cli("validate", str(tmp_write("c.yml", GOOD)))
    assert r.returncode == 0, r.stderr
    assert "ok" in r.stdout


def test_yaml_syntax_error_has_line(tmp_write):
    (p,) = problems(GOOD.replace("  clean: clean", "  clean: [clean"), tmp_write)
    assert p.line is not None and "YAML" in p.message
