"""``sluicegate dlq history`` on a Delta warehouse (DuckDB + delta-rs), and what the
DuckDB-file warehouse says instead.

The orders example publishes its DLQ as Delta tables; one row is fixed and recycled,
one rejected. The history read from the change data feed must name each step with the
commit version and time that the table's own log (its JSON commit files, read here
without delta-rs) records, and the DLQ tables' log must switch the change feed on.
"""

from __future__ import annotations

import datetime as dt
import json
from pathlib import Path
from typing import Any

import pytest

from sluicegate.compile.contract_check import load_contract
from sluicegate.dlq.lifecycle import fix, mark
from sluicegate.dlq.store import open_store
from sluicegate.run.pipeline import run_contract
from sluicegate.run.recycle import recycle
from tests.cli.test_cli_json_shapes import valid
from tests.conftest import copy_orders_example, run_cli

pytestmark = pytest.mark.duckdb

DAY = "2024-01-01"


def operate(contract: Path, fmt: str | None, engine: str = "duckdb") -> dict[str, str]:
    """Run, fix line 2's row, reject line 3's, recycle; the two keys."""
    loaded = load_contract(contract, logical_date=DAY)
    loaded.contract.outputs.format = fmt
    r = run_contract(loaded, engine_name=engine)
    assert r.exit_code in (0, 1), r.metrics.get("error")
    with open_store(loaded, engine_name=engine) as s:
        by_line = {row["_source_line"]: row["_dlq_sk"] for row in s.rows()}
        fix(s, keys=[by_line[2]], where=None, sets={"cid": "10"}, by="ann")
        mark(s, keys=[by_line[3]], where=None, status="rejected", by="ann")
        recycle(s, by="bob")
    return {"fixed": by_line[2], "rejected": by_line[3]}


def with_format(folder: Path, fmt: str) -> Path:
    contract = copy_orders_example(folder) / "contract.yml"
    text = contract.read_text()
    text = text.replace("warehouse: ${root}/../warehouse.duckdb", "warehouse: wh-delta")
    contract.write_text(text.replace("  clean:", f"  format: {fmt}\n  clean:", 1))
    return contract


def commits(table: Path) -> dict[int, dict[str, Any]]:
    """Each commit of ``table`` from its JSON log file: timestamp, cdc files, metadata."""
    out = {}
    for f in sorted((table / "_delta_log").glob("*.json")):
        actions = [json.loads(x) for x in f.read_text().splitlines() if x.strip()]
        info = next(a["commitInfo"] for a in actions if "commitInfo" in a)
        meta = next((a["metaData"] for a in actions if "metaData" in a), None)
        out[int(f.stem)] = {
            "ms": info["timestamp"],
            "cdc": sum("cdc" in a for a in actions),
            "meta": meta,
        }
    return out


@pytest.fixture(scope="module")
def delta(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    tmp = tmp_path_factory.mktemp("dlq-history")
    contract = with_format(tmp / "orders", "delta")
    keys = operate(contract, "delta")
    return {"contract": contract, "keys": keys, "wh": contract.parent / "wh-delta"}


def history(contract: Path, *args: str) -> dict[str, Any]:
    r = run_cli("dlq", "history", str(contract), *args, "--json")
    assert r.returncode == 0, r.stderr
    return json.loads(r.stdout)


def test_dlq_tables_have_the_change_data_feed_on(delta):
    for table in ("quarantine", "quarantine_outbox"):
        log = commits(delta["wh"] / table)
        assert log[0]["meta"]["configuration"]["delta.enableChangeDataFeed"] == "true", table


def test_history_names_each_step_with_the_logs_version_and_time(delta):
    doc = history(delta["contract"], "--row", delta["keys"]["fixed"])
    assert doc["source"] == "change_data_feed" and len(doc["rows"]) == 1
    valid(doc, "dlq_history")  # the shape docs/cli.md publishes
    events = doc["rows"][0]["events"]
    steps = [(e["table"], e["change"], e["status"]) for e in events]
    assert steps == [
        ("inbox", "insert", "quarantined"),
        ("inbox", "update_postimage", "fixed"),
        ("outbox", "insert", "recycled"),
        ("inbox", "update_postimage", "recycled"),
    ]
    assert "cid" in events[1]["changed"] and events[3]["changed"] == ["_dlq_status"]
    assert events[2]["run_id"].startswith("recycle-")
    logs = {t: commits(delta["wh"] / t) for t in ("quarantine", "quarantine_outbox")}
    for e in events:
        log = logs["quarantine" if e["table"] == "inbox" else "quarantine_outbox"]
        ms = log[e["version"]]["ms"]
        assert e["at"] == dt.datetime.fromtimestamp(ms / 1000, dt.UTC).replace(
            tzinfo=None
        ).isoformat(sep=" ", timespec="milliseconds"), e
    # the updates are real change-data files in the log, not inferred
    assert logs["quarantine"][events[1]["version"]]["cdc"] >= 1


def test_a_rejected_row_ends_rejected_and_never_reaches_the_outbox(delta):
    doc = history(delta["contract"], "--row", delta["keys"]["rejected"])
    events = doc["rows"][0]["events"]
    assert [e["status"] for e in events] == ["quarantined", "rejected"]
    assert all(e["table"] == "inbox" for e in events)
    whole = history(delta["contract"])
    assert len(whole["rows"]) == 8  # every quarantined row of the example has a history


def test_text_output_and_unknown_row(delta):
    r = run_cli("dlq", "history", str(delta["contract"]), "--row", delta["keys"]["fixed"])
    assert r.returncode == 0, r.stderr
    assert "update_postimage fixed" in r.stdout and "outbox v" in r.stdout
    r = run_cli("dlq", "history", str(delta["contract"]), "--row", "123")
    assert r.returncode == 2 and "no DLQ row with key 123" in r.stderr, r.stderr


def test_the_duckdb_file_warehouse_points_at_the_audit_table(tmp_path):
    contract = copy_orders_example(tmp_path / "orders") / "contract.yml"
    operate(contract, None)
    r = run_cli("dlq", "history", str(contract))
    assert r.returncode == 2, r.stderr
    assert "keeps no change data feed" in r.stderr and "quarantine_audit" in r.stderr
    assert "Traceback" not in r.stderr
