"""The peer benchmark's foundations at a tiny size, without the peers' virtualenvs.

``make test`` never builds ``.venv-peers/``: here the peers are absent (or their build
"failed"), so their rows must say why while sluicegate's row on the typed Parquet still
runs and meets the truth. The typed input itself is checked against the generator's
truth by an independent recount in plain Python (the eight rules applied row by row).
Timings are never asserted.
"""

from __future__ import annotations

import json
import subprocess
import sys
from decimal import Decimal
from pathlib import Path

import duckdb
import pytest

REPO = Path(__file__).resolve().parents[2]
BENCH = REPO / "benchmarks"
TINY_DIR = "retail-5000-seed42"


@pytest.fixture(scope="module")
def bench_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess]:
    """One tiny peer-bench run: pandera's venv build failed, the other peers have none."""
    root = tmp_path_factory.mktemp("peers")
    venvs = root / "venvs"
    venvs.mkdir()
    (venvs / "pandera.error").write_text("could not build .venv-peers/pandera: no network\n")
    argv = [
        sys.executable,
        str(BENCH / "peer_bench.py"),
        "--scale",
        "tiny",
        "--runs",
        "1",
        "--cache",
        str(root / "cache"),
        "--venvs",
        str(venvs),
        "--results",
        str(root / "results.jsonl"),
        "--table-json",
        str(root / "table.json"),
    ]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=300, cwd=REPO)
    return root, done


@pytest.mark.slow
def test_missing_peers_are_rows_that_say_why(bench_run: tuple[Path, subprocess.CompletedProcess]):
    root, done = bench_run
    assert done.returncode == 0, done.stdout + done.stderr
    rows = {r["pipeline"]: r for r in json.loads((root / "table.json").read_text())["rows"]}
    assert rows["pandera"]["skipped"].startswith("could not build .venv-peers/pandera: no network")
    assert "make peer-venvs" in rows["pointblank"]["skipped"]
    assert "make peer-venvs" in rows["soda"]["skipped"]
    assert rows["sluicegate"]["truth"] == "ok"
    assert rows["sluicegate"]["median_validate_s"] is not None  # the route stage's timer
    assert "skipped: could not build" in done.stdout


@pytest.mark.slow
def test_typed_input_meets_the_truth_by_a_recount(
    bench_run: tuple[Path, subprocess.CompletedProcess],
):
    root, _ = bench_run
    feed = root / "cache" / TINY_DIR
    truth = json.loads((feed / "expected.json").read_text())
    products = _ids(feed / "products.json", "product_id")
    stores = _ids(feed / "stores.json", "store_id")
    con = duckdb.connect()
    rows = con.execute(
        "SELECT sale_id, customer_id, product_id, store_id, quantity, unit_price, order_ts "
        "FROM read_parquet($p)",
        {"p": str(feed / "peers" / "sales_typed.parquet")},
    ).fetchall()
    con.close()
    failures = dict.fromkeys(truth["rule_failures"], 0)
    quarantined = 0
    for sale_id, customer, product, store, quantity, price, order_ts in rows:
        assert sale_id is not None
        failed = {
            "non_null_customer": customer is None,
            "non_null_product": product is None,
            "non_null_store": store is None,
            "positive_quantity": quantity is None or quantity <= 0,
            "valid_price": price is None or price < Decimal(0),
            "known_product": product is not None and product not in products,
            "known_store": store is not None and store not in stores,
            "parseable_order_ts": order_ts is None,
        }
        for rule, hit in failed.items():
            failures[rule] += hit
        quarantined += any(failed.values())
    assert len(rows) == truth["deduplicated_rows"]
    assert len({r[0] for r in rows}) == len(rows)  # deduplicated: one row per sale_id
    assert failures == truth["rule_failures"]
    assert quarantined == truth["quarantined"]


def _ids(path: Path, key: str) -> set[str]:
    ids = (json.loads(line).get(key) for line in path.read_text().splitlines() if line.strip())
    return {i for i in ids if i is not None}
