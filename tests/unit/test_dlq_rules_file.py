"""``rules_file:`` (shared expectations) and ``${secret:scope/key}`` tokens.

A rules file resolves against the contract's folder, its problems are reported in its own
file and line. A ``${secret:…}`` in a rule (or a column type, or a path) is refused where
it is written: a secret is only accepted in the credential keys a driver consumes
(``contract/secret.py``), so it can never reach compiled SQL, the DLQ or the metrics.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from sluicegate.compile.contract_check import load_contract
from sluicegate.errors import ContractError
from tests.conftest import run_cli, write

SECRET = "77771234"  # a value that occurs nowhere else (secrets need 8+ characters)
ENV = {"SLUICEGATE_SECRET_OPS_LIMIT": SECRET}

CONTRACT = """
name: shop
vars: {limit: "77771234"}
source:
  name: orders_raw
  path: ../data/orders.json
  columns:
    oid: {type: BIGINT, nullable: false}
    amt: INTEGER
rules:
  - name: has_amount
    expect: amt IS NOT NULL
rules_file: ../shared/rules.yml
gate: {warn_above: 1.0, fail_above: 1.0}
outputs:
  warehouse: ../wh.duckdb
  clean: clean
  quarantine: dlq
"""
RULES = """
# shared by every shop contract
rules:
  - name: positive
    expect: amt > 0
  - name: below_limit
    expect: amt < ${limit}
"""


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    write(tmp_path / "shared" / "rules.yml", RULES)
    write(
        tmp_path / "data" / "orders.json",
        '{"oid": 1, "amt": 5}\n{"oid": 2, "amt": 99999999}\n{"oid": 3, "amt": -1}\n',
    )
    return write(tmp_path / "feeds" / "contract.yml", CONTRACT)


def test_rules_file_resolves_against_the_contract_not_the_cwd(shop, monkeypatch):
    monkeypatch.chdir("/")
    monkeypatch.setenv("SLUICEGATE_SECRET_OPS_LIMIT", SECRET)
    c = load_contract(shop).contract
    assert [r.name for r in c.rules] == ["has_amount", "positive", "below_limit"]
    assert c.rules[2].expect == "amt < 77771234"


def test_one_rules_file_serves_two_contracts(shop, monkeypatch):
    monkeypatch.setenv("SLUICEGATE_SECRET_OPS_LIMIT", SECRET)
    other = write(
        shop.parent.parent / "other" / "deep" / "c.yml",
        CONTRACT.replace("../shared/rules.yml", "../../shared/rules.yml"),
    )
    assert [r.name for r in load_contract(other).contract.rules][1:] == ["positive", "below_limit"]


def test_problems_in_the_rules_file_name_that_file_and_line(shop, monkeypatch):
    monkeypatch.setenv("SLUICEGATE_SECRET_OPS_LIMIT", SECRET)
    rules = shop.parent.parent / "shared" / "rules.yml"
    rules.write_text(RULES.replace("amt > 0", "amount > 0"), encoding="utf-8")
    with pytest.raises(ContractError) as ei:
        load_contract(shop)
    (p,) = ei.value.problems
    assert p.file == str(rules) and p.line == 5 and p.path == "rules[0].expect"
    assert p.suggestion == "amt"
    assert str(ei.value).startswith(f"{rules}:5 [rules[0].expect]")


def test_missing_rules_file_is_located_in_the_contract(shop):
    write(shop, CONTRACT.replace("../shared/rules.yml", "nope.yml"))
    line = shop.read_text().splitlines().index("rules_file: nope.yml") + 1
    with pytest.raises(ContractError) as ei:
        load_contract(shop, secret_provider=lambda s, k: SECRET)
    (p,) = ei.value.problems
    assert p.path == "rules_file" and p.line == line and "nope.yml' not found" in p.message
    assert p.file is None  # reported in the contract itself


SECRET_RULES = RULES.replace("${limit}", "${secret:ops/limit}")


def test_missing_secret_names_the_variable_not_a_value(shop):
    (shop.parent.parent / "shared" / "rules.yml").write_text(SECRET_RULES, encoding="utf-8")
    r = run_cli("validate", str(shop))
    assert r.returncode == 2
    assert "SLUICEGATE_SECRET_OPS_LIMIT" in r.stderr and "Traceback" not in r.stderr


def test_a_secret_in_a_shared_rule_is_refused_in_the_rules_file(shop):
    # a rule's text is compiled SQL, the DLQ's _failed_rules and the metrics: no place for
    # a secret, so it is refused before anything runs, and the value is never shown
    rules = shop.parent.parent / "shared" / "rules.yml"
    rules.write_text(SECRET_RULES, encoding="utf-8")
    r = run_cli("validate", str(shop), env=ENV)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "holds a secret" in r.stderr and "serve[].password" in r.stderr
    assert str(rules) in r.stderr and "rules_file[1].expect" in r.stderr
    assert SECRET not in r.stdout + r.stderr
    r = run_cli("run", str(shop), "--json", env=ENV)
    assert r.returncode == 2 and SECRET not in r.stdout + r.stderr
    assert not (shop.parent.parent / "wh.duckdb").exists()  # nothing ran


def test_a_secret_in_a_column_type_is_refused_without_showing_it(shop, tmp_path):
    bad = CONTRACT.replace("amt: INTEGER", "amt: ${secret:ops/limit}")
    shop.write_text(bad, encoding="utf-8")
    r = run_cli("validate", str(shop), env=ENV)
    assert r.returncode == 2 and "holds a secret" in r.stderr, r.stderr
    assert "source.columns.amt" in r.stderr and SECRET not in r.stderr


def test_secret_in_a_source_path_is_refused_without_showing_it(shop):
    # lineage stores the source path in every row, so a path holding a secret is refused
    # before the run (a located contract error) and the error never shows the path
    bad = CONTRACT.replace("../data/orders.json", "../data/${secret:ops/limit}.json")
    shop.write_text(bad, encoding="utf-8")
    r = run_cli("run", str(shop), env=ENV)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert SECRET not in r.stderr + r.stdout and "holds a secret" in r.stderr
