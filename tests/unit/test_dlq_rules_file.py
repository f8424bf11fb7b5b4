"""``rules_file:`` (shared expectations) and ``${secret:scope/key}`` tokens.

A rules file resolves against the contract's folder, its problems are reported in its own
file and line, and a secret's value never leaves the process: not in errors, not in
``compile`` output, not in run metrics (file or ``--json``), not in ``dlq`` output.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sluicegate.compile.contract_check import load_contract
from sluicegate.errors import ContractError
from tests.conftest import run_cli, write

SECRET = "77771234"  # a value that occurs nowhere else (secrets need 8+ characters)
ENV = {"SLUICEGATE_SECRET_OPS_LIMIT": SECRET}

CONTRACT = """
name: shop
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
    expect: amt < ${secret:ops/limit}
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
    assert c.rules[2].expect == f"amt < {SECRET}"  # resolved for evaluation only


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


def test_missing_secret_names_the_variable_not_a_value(shop):
    r = run_cli("validate", str(shop))
    assert r.returncode == 2
    assert "SLUICEGATE_SECRET_OPS_LIMIT" in r.stderr and "Traceback" not in r.stderr


def test_secret_value_never_leaves_the_process(shop):
    outputs = []

    def cli(*args: str, code: int | None = 0) -> str:
        r = run_cli(*args, env=ENV)
        if code is not None:
            assert r.returncode == code, r.stderr
        outputs.append(r.stdout + r.stderr)
        return r.stdout

    cli("validate", str(shop))
    compiled = cli("compile", str(shop))
    assert "amt < ***" in compiled
    cli("compile", str(shop), "--dialect", "spark")
    metrics = json.loads(cli("run", str(shop), "--json", "--logical-date", "2024-01-01"))
    assert metrics["rules"]["below_limit"]["failed"] == 1
    cli("run", str(shop), "--logical-date", "2024-01-01")
    listed = json.loads(cli("dlq", "list", str(shop), "--json"))
    over = next(r for r in listed["rows"] if r["oid"] == 2)
    assert {"name": "below_limit", "rule": "amt < ***"} in over["_failed_rules"]
    cli("dlq", "list", str(shop))
    cli("dlq", "show", str(shop), over["_dlq_sk"], "--json")
    cli("dlq", "show", str(shop), over["_dlq_sk"])
    cli("dlq", "fix", str(shop), over["_dlq_sk"], "--set", "amt=5", "--json")
    cli("dlq", "recycle", str(shop), "--json")
    cli("dlq", "recycle", str(shop))
    # an error whose text would carry the secret: a value that is not a valid INTEGER
    cli("dlq", "fix", str(shop), over["_dlq_sk"], "--set", f"amt={SECRET}x", code=2)
    files = list((shop.parent.parent / "wh.runs").rglob("*.json"))
    assert files
    outputs += [f.read_text(encoding="utf-8") for f in files]
    for text in outputs:
        assert SECRET not in text
    assert any("***" in text for text in outputs)


def test_secret_in_a_contract_error_is_redacted(shop, tmp_path):
    bad = CONTRACT.replace("amt: INTEGER", "amt: ${secret:ops/limit}")
    shop.write_text(bad, encoding="utf-8")
    r = run_cli("validate", str(shop), env=ENV)
    assert r.returncode == 2 and "unknown type" in r.stderr
    assert SECRET not in r.stderr and "***" in r.stderr


def test_secret_in_a_source_path_is_refused_without_showing_it(shop):
    # lineage stores the source path in every row, so a path holding a secret is refused
    # before the run (a located contract error) and the error never shows the path
    bad = CONTRACT.replace("../data/orders.json", "../data/${secret:ops/limit}.json")
    shop.write_text(bad, encoding="utf-8")
    r = run_cli("run", str(shop), env=ENV)
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert SECRET not in r.stderr + r.stdout and "holds a secret" in r.stderr
