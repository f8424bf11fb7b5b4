"""``sluicegate init`` drafts contracts that validate and run as written, on the retail
demo feed and on a differently shaped hostile CSV, without over-fitting to its flaws.

The expected types, keys and counts are computed here from the generated rows (an
independent account), not read back from the draft.
"""

from __future__ import annotations

import json
import random
from pathlib import Path

import pytest

from sluicegate.compile.contract_check import load_contract
from tests.conftest import run_cli

pytestmark = [pytest.mark.duckdb, pytest.mark.slow]


def _run(contract: Path) -> dict:
    r = run_cli("run", str(contract), "--json")
    assert r.returncode == 0, r.stderr  # the draft's gate passes on the data it came from
    m = json.loads(r.stdout)
    assert m["ledger"]["balanced"] is True
    return m


@pytest.fixture(scope="module")
def retail(tmp_path_factory) -> Path:
    from sluicegate.datagen.retail import generate

    root = tmp_path_factory.mktemp("retail")
    generate(root / "feed", 6000)
    return root


def test_init_on_the_retail_feed(retail):
    r = run_cli(
        "init",
        "sales",
        "--from",
        "feed/sales",
        "--reference",
        "products=feed/products.json",
        "--reference",
        "stores=feed/stores.json",
        cwd=retail,
    )
    assert r.returncode == 0, r.stderr
    assert "wrote" in r.stdout and "trial run on the data: raw" in r.stdout
    path = retail / "sales.yml"
    text = path.read_text()
    c = load_contract(path).contract
    cols = {k: v.parsed.canonical for k, v in c.source.columns.items()}
    # promo_code is on ~1 % of records: declared (VARCHAR) or named as left out, by sample
    assert cols.pop("promo_code", "VARCHAR") == "VARCHAR" and "promo_code" in text
    assert cols == {
        "sale_id": "VARCHAR",
        "order_ts": "TIMESTAMP",
        "customer_id": "VARCHAR",
        "product_id": "VARCHAR",
        "store_id": "VARCHAR",
        "channel": "VARCHAR",
        "quantity": "INTEGER",
        "unit_price": "DECIMAL(10,2)",
        "ingested_at": "TIMESTAMP",
    }
    # both timestamp spellings of the generator, and nothing the hostile values suggest
    assert c.source.columns["order_ts"].formats == ["%Y-%m-%dT%H:%M:%SZ", "%d/%m/%Y %H:%M:%S"]
    assert c.source.partitions == ["month"]
    assert c.dedupe is not None and c.dedupe.key == ["sale_id"]
    expects = {rule.name: rule.expect for rule in c.rules}
    assert expects["known_product_id"] == (
        "product_id IS NULL OR product_id IN (SELECT product_id FROM products)"
    )
    assert "known_store_id" in expects and "quantity_positive" in expects
    m = _run(path)
    assert m["ledger"]["corrupt"] > 0 and m["ledger"]["duplicates"] > 0


def _payments(root: Path, rows: int = 3000) -> dict:
    """A ;-separated payments CSV with day.month.year dates, booleans, a free-text column
    that is mostly empty, one that is 0.1 % empty, corrupt lines, duplicates, unknown
    merchants and unparseable amounts — and the truth about it."""
    rng = random.Random(7)
    merchants = [f"M{i:03d}" for i in range(1, 41)]
    (root / "merchants.csv").write_text(
        "merchant_id,name,country\n"
        + "".join(f"{m},Shop {m},{rng.choice(['DE', 'FR', 'NL'])}\n" for m in merchants)
    )
    lines = ["payment_id;merchant_id;amount;currency;paid_on;captured;email;note"]
    truth = {"corrupt": 0, "email_null": 0, "bad_amount": 0, "unknown_merchant": 0}
    ids = []
    for i in range(rows):
        r = rng.random()
        if r < 0.005:
            lines.append(f"P{i:06d};garbage line without fields")
            truth["corrupt"] += 1
            continue
        pid = rng.choice(ids) if ids and rng.random() < 0.01 else f"P{i:06d}"
        ids.append(pid)
        merchant = "M999" if rng.random() < 0.01 else rng.choice(merchants)
        truth["unknown_merchant"] += merchant == "M999"
        amount = f"{rng.randint(100, 99999) / 100:.2f}"
        if rng.random() < 0.004:
            amount, truth["bad_amount"] = "12,50", truth["bad_amount"] + 1
        currency = "eur" if rng.random() < 0.001 else rng.choice(["EUR", "USD", "GBP"])
        day = f"{rng.randint(1, 28):02d}.{rng.randint(1, 12):02d}.2024"
        email = "" if i % 1000 == 7 else f"c{i}@example.com"
        truth["email_null"] += email == ""
        note = rng.choice(["gift", "late"]) if rng.random() < 0.1 else ""
        captured = rng.choice(["true", "false", "TRUE"])
        lines.append(f"{pid};{merchant};{amount};{currency};{day};{captured};{email};{note}")
    (root / "payments.csv").write_text("\n".join(lines) + "\n")
    return truth


def test_init_on_a_hostile_csv_does_not_overfit(tmp_path):
    data = tmp_path / "data"
    data.mkdir()
    truth = _payments(data)
    out = tmp_path / "contracts" / "payments.yml"
    out.parent.mkdir()
    r = run_cli(
        "init",
        "payments",
        "--from",
        str(data / "payments.csv"),
        "--reference",
        f"merchants={data / 'merchants.csv'}",
        "--out",
        str(out),
    )
    assert r.returncode == 0, r.stderr
    text = out.read_text()
    c = load_contract(out).contract
    assert c.source.format == "csv" and c.source.csv.delimiter == ";"
    assert c.source.path == "../data/payments.csv"  # relative to the contract's folder
    cols = {k: v.parsed.canonical for k, v in c.source.columns.items()}
    assert cols == {
        "payment_id": "VARCHAR",
        "merchant_id": "VARCHAR",
        "amount": "DECIMAL(10,2)",
        "currency": "VARCHAR",
        "paid_on": "DATE",
        "captured": "BOOLEAN",
        "email": "VARCHAR",
        "note": "VARCHAR",
    }
    assert c.source.columns["paid_on"].formats == ["%d.%m.%Y"]
    # corrupt lines and bad amounts did not make amount text: they are counted instead
    assert f"{truth['bad_amount']} values do not cast (e.g. '12,50')" in text
    # the 0.1 % empty column gets a visible rule with its count, not nullable: false
    assert not any(not s.nullable for s in c.source.columns.values())
    expects = {rule.name: rule.expect for rule in c.rules}
    assert expects["email_present"] == "email IS NOT NULL"
    assert f"{truth['email_null']} of " in text and "NULL or absent" in text
    assert "note_present" not in expects  # 90 % empty: optional, not a rule
    assert expects["valid_currency"] == "currency IS NULL OR currency IN ('EUR', 'GBP', 'USD')" or (
        set(expects["valid_currency"].split("IN (")[1].strip(")").split(", "))
        == {"'EUR'", "'GBP'", "'USD'"}
    )
    assert "'eur'" in text  # the rare spelling is named as a value that would be quarantined
    assert expects["known_merchant_id"] == (
        "merchant_id IS NULL OR merchant_id IN (SELECT merchant_id FROM merchants)"
    )
    assert f"{truth['unknown_merchant']} not found" in text
    assert c.dedupe is not None and c.dedupe.key == ["payment_id"]
    m = _run(out)
    assert m["ledger"]["corrupt"] == truth["corrupt"]
    assert m["ledger"]["quarantined_by_reason"].get("known_merchant_id", 0) > 0


def test_init_refuses_to_overwrite_and_bad_names(tmp_path):
    (tmp_path / "d.csv").write_text("a,b\n1,2\n")
    (tmp_path / "x.yml").write_text("keep me")
    r = run_cli("init", "x", "--from", "d.csv", "--out", "x.yml", cwd=tmp_path)
    assert r.returncode == 2 and "exists" in r.stderr and "--force" in r.stderr
    assert (tmp_path / "x.yml").read_text() == "keep me"
    r = run_cli("init", "My-Feed", "--from", "d.csv", cwd=tmp_path)
    assert r.returncode == 2 and "sluicegate init my_feed" in r.stderr
    r = run_cli("init", "x", "--from", "missing/*.csv", "--force", cwd=tmp_path)
    assert r.returncode == 2 and "Traceback" not in r.stderr


def test_init_on_parquet_types_from_values_and_no_zero_quarantine(tmp_path):
    import datetime as dt

    import pyarrow as pa
    import pyarrow.parquet as pq

    n = 500
    pq.write_table(
        pa.table(
            {
                "id": pa.array(range(n), pa.int64()),
                "price": pa.array([None if i == 3 else i * 1.25 for i in range(n)], pa.float64()),
                "ts": pa.array(
                    [dt.datetime(2024, 1, 1, 0, 0, i % 60) for i in range(n)], pa.timestamp("us")
                ),
                "flag": pa.array([i % 2 == 0 for i in range(n)]),
            }
        ),
        tmp_path / "t.parquet",
    )
    r = run_cli("init", "events", "--from", "t.parquet", cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    c = load_contract(tmp_path / "events.yml").contract
    cols = {k: v.parsed.canonical for k, v in c.source.columns.items()}
    assert cols == {"id": "INTEGER", "price": "DECIMAL(10,2)", "ts": "TIMESTAMP", "flag": "BOOLEAN"}
    expects = {rule.name: rule.expect for rule in c.rules}
    # price has a 0 and no negative: >= 0, not > 0 (which would quarantine the zero)
    assert expects["price_non_negative"] == "price IS NULL OR price >= 0"
    assert "id_positive" not in expects and c.dedupe.key == ["id"]  # a key gets no sign rule
    m = _run(tmp_path / "events.yml")
    assert m["ledger"]["quarantined"] == 1  # the NULL price, named by its rule
