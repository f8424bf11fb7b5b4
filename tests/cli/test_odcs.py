"""ODCS v3 out and in: every example survives export → import unchanged (same digest),
the export is a valid ODCS document, and a document another tool wrote imports with
every unmappable part named."""

from __future__ import annotations

import importlib.resources
import json
import shutil
from pathlib import Path

import jsonschema
import pytest
import yaml

from sluicegate.compile.contract_check import load_contract
from sluicegate.interop.odcs_export import export_odcs
from sluicegate.interop.odcs_import import import_odcs
from tests.conftest import REPO, run_cli, write

EXAMPLES = sorted(REPO.glob("examples/*/contract.yml")) + [
    REPO / "src/sluicegate/examples/retail.yml"
]
FOREIGN = REPO / "tests/data/odcs/payments.odcs.yaml"

RICH = """\
name: payments
owner: payments@example.com
vars: {root: ./data, limit: "0.2"}
engine: {name: duckdb, threads: 2, options: {password: "${secret:db/password}"}}
source:
  path: ${root}/payments/*.csv
  format: CSV
  csv: {delimiter: ";", header: true}
  partitions: [day]
  ready_when: _SUCCESS
  columns:
    payment_id: {type: string, nullable: false}
    amount: DECIMAL(12,2)
    score: {type: DOUBLE, finite: false}
    paid_at: {type: DATETIME, formats: ["%d.%m.%Y %H:%M:%S"]}
  freshness: {column: paid_at, max_age: 36h, on_stale: fail}
dedupe: {key: [payment_id], order_by: ["paid_at DESC"]}
rules:
  - {name: positive, expect: amount > 0, on_fail: warn, version: 2}
  - {name: scored, expect: score IS NOT NULL, fail_above: 0.1, owner: risk@example.com}
rules_file: more_rules.yml
gate: {warn_above: 0.01, fail_above: "${limit}", on_stream_fail: continue}
outputs: {warehouse: wh.duckdb, clean: ok, quarantine: bad, partition_by: [day]}
"""


@pytest.fixture(scope="module")
def odcs_schema() -> dict:
    text = importlib.resources.files("open_data_contract_standard").joinpath("schema.json")
    return json.loads(text.read_text())


def _round_trip(contract: Path, env: dict | None = None) -> tuple[str, Path]:
    exported = export_odcs(contract)
    odcs = contract.parent / "exported.odcs.yaml"
    odcs.write_text(exported)
    back = contract.parent / "imported.yml"
    back.write_text(import_odcs(odcs).to_yaml(odcs.name))
    return exported, back


def _same(a: Path, b: Path) -> None:
    la, lb = load_contract(a), load_contract(b)
    da, db = la.contract.model_dump(), lb.contract.model_dump()
    da.pop("rules_file"), db.pop("rules_file")
    assert db == da


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda p: str(p.relative_to(REPO)))
def test_every_example_round_trips(tmp_path, example, odcs_schema):
    contract = tmp_path / "contract.yml"
    shutil.copy(example, contract)
    exported, back = _round_trip(contract)
    jsonschema.validate(yaml.safe_load(exported), odcs_schema)
    _same(contract, back)
    assert load_contract(contract).digest == load_contract(back).digest


def test_a_rich_contract_round_trips_without_resolving_secrets(tmp_path, monkeypatch, odcs_schema):
    monkeypatch.setenv("SLUICEGATE_SECRET_DB_PASSWORD", "hunter2-very-secret")
    write(tmp_path / "more_rules.yml", "- {name: from_file, expect: amount < 1000000}\n")
    contract = write(tmp_path / "contract.yml", RICH)
    exported, back = _round_trip(contract)
    jsonschema.validate(yaml.safe_load(exported), odcs_schema)
    assert "hunter2" not in exported and "${secret:db/password}" in exported
    doc = yaml.safe_load(exported)
    quality = {q["name"]: q for q in doc["schema"][0]["quality"]}
    assert quality["positive"]["query"] == (
        "SELECT COUNT(*) FROM payments WHERE (amount > 0) IS NOT TRUE"
    )
    assert quality["positive"]["severity"] == "warning" and quality["positive"]["mustBe"] == 0
    assert "from_file" in quality  # the rules file's rules travel inline
    assert doc["slaProperties"][0] == {
        "property": "latency",
        "value": 36,
        "unit": "h",
        "element": "payments.paid_at",
    }
    props = {p["name"]: p for p in doc["schema"][0]["properties"]}
    assert props["payment_id"]["required"] is True and props["amount"]["logicalType"] == "number"
    assert props["day"]["partitioned"] is True
    _same(contract, back)


def test_the_sql_check_counts_the_rows_a_rule_fails(tmp_path):
    """The exported query, run on a run's input, counts exactly the rule's failures."""
    import duckdb

    contract = write(
        tmp_path / "c.yml",
        """\
        name: t
        source: {path: d.json, columns: {x: INTEGER}}
        rules: [{name: pos, expect: x > 0}]
        outputs: {warehouse: wh.duckdb, clean: ok, quarantine: bad}
        """,
    )
    query = yaml.safe_load(export_odcs(contract))["schema"][0]["quality"][0]["query"]
    con = duckdb.connect()
    con.execute("CREATE TABLE t AS SELECT * FROM (VALUES (1), (0), (-2), (NULL), (5)) v(x)")
    assert con.execute(query).fetchone()[0] == 3  # 0, -2 and NULL fail; NULL is not TRUE


def test_a_foreign_odcs_document_imports_and_names_what_it_cannot_carry(tmp_path):
    r = run_cli("import", "odcs", str(FOREIGN), "--out", str(tmp_path / "payments.yml"))
    assert r.returncode == 0, r.stderr
    text = (tmp_path / "payments.yml").read_text()
    named = [
        "server 'warehouse' (type postgres)",
        "property 'items': logicalType 'array'",
        "quality check 'rowCount'",
        "quality check 'text'",
        "relationship ['payments.merchant_id', 'payments.country']",
        "slaProperties: retention 3y",
        "price",
        "roles",
        "support",
        "customProperties refRulesetName",
        "property 'payment_id': classification",
        "logicalTypeOptions format",
    ]
    for part in named:
        assert part in r.stderr and part in text, part
    c = load_contract(tmp_path / "payments.yml").contract
    assert c.name == "merchant_payments" and c.owner == "payments-team@example.com"
    assert c.source.format == "csv" and c.source.path == "./landing/payments.csv"
    assert c.dedupe is not None and c.dedupe.key == ["payment_id"]
    assert c.source.freshness is not None and c.source.freshness.max_age == "4h"
    assert not c.source.columns["payment_id"].nullable
    assert c.source.columns["amount"].parsed.canonical == "DECIMAL(12,2)"
    expects = {rule.name: rule.expect for rule in c.rules}
    assert expects["known_merchant_id"] == (
        "merchant_id IS NULL OR merchant_id IN (SELECT id FROM merchants)"
    )
    assert expects["country_invalidvalues"] == "country IS NULL OR country IN ('DE', 'FR', 'NL')"
    assert expects["no_zero_amounts"] == "(amount = 0) IS NOT TRUE"
    # and it runs: the imported rules bite on data
    landing = tmp_path / "landing"
    write(
        landing / "payments.csv",
        """\
        payment_id,merchant_id,country,amount,paid_at,card_fingerprint,booked_on
        p1,m1,DE,10.00,2024-05-01T10:00:00Z,0123456789abcdef,2024-05-01
        p2,m1,XX,5.00,2024-05-01T11:00:00Z,0123456789abcdef,2024-05-01
        p3,m9,FR,7.00,2024-05-01T12:00:00Z,0123456789abcdef,2024-05-01
        p4,m1,NL,-1.00,2024-05-01T12:00:00Z,zz,2024-05-01
        """,
    )
    write(landing / "merchants.csv", "id,country\nm1,DE\n")
    r = run_cli("run", str(tmp_path / "payments.yml"), "--json")
    m = json.loads(r.stdout)
    assert m["ledger"]["balanced"] and m["ledger"]["clean"] == 1
    assert m["ledger"]["quarantined_by_reason"] == {
        "country_invalidvalues": 1,
        "known_merchant_id": 1,
        "amount_minimum": 1,
    }


def test_import_refuses_what_is_not_odcs(tmp_path):
    bad = write(tmp_path / "x.yaml", "schema: 3\nbogus: true\n")
    r = run_cli("import", "odcs", str(bad))
    assert r.returncode == 2 and "not an ODCS v3 document" in r.stderr
    assert "Traceback" not in r.stderr


STREAMING = """\
name: clicks
source:
  format: kafka
  kafka:
    bootstrap_servers: 127.0.0.1:9092
    topics: [clicks]
    starting_offsets: latest
    security: {protocol: SASL_SSL, sasl_mechanism: PLAIN, username: u, password: "${secret:k/p}"}
  columns: {id: BIGINT, url: VARCHAR}
rules: [{name: has_url, expect: url IS NOT NULL}]
outputs: {warehouse: wh.duckdb, clean: clicks_ok, quarantine: clicks_dlq}
alerts: [{url: "json://127.0.0.1:9/hook", on: [fail, warn]}]
lineage: {url: "http://127.0.0.1:5000"}
serve: [{name: app, url: "postgresql://app@127.0.0.1:5432/app", tables: [quality_facts]}]
"""


def test_streaming_alerts_lineage_and_serve_round_trip(tmp_path, monkeypatch, odcs_schema):
    """Sections other issues added travel too: none is dropped on the way out or in."""
    monkeypatch.setenv("SLUICEGATE_SECRET_K_P", "kafka-secret-value")
    contract = write(tmp_path / "contract.yml", STREAMING)
    exported, back = _round_trip(contract)
    jsonschema.validate(yaml.safe_load(exported), odcs_schema)
    assert "kafka-secret-value" not in exported
    _same(contract, back)
