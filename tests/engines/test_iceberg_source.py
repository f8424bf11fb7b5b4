"""Iceberg sources bound by time and by a snapshot that later expires (embedded engine).

* ``source.as_of``: the run binds the snapshot that was the table's current one at that
  instant. The expected snapshot is computed here from the table's snapshot log as
  pyiceberg reads it (the last log entry at or before the instant), and the run's rows
  are checked against a pyiceberg scan of that snapshot.
* A snapshot expired (pyiceberg's ``expire_snapshots``) after a run bound it: the rerun
  stops with a one-line located error naming the snapshot and a hint line, exit 2, no
  traceback.
"""

from __future__ import annotations

import datetime as dt
import json
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pytest

from tests.conftest import run_cli
from tests.iceberg_read import catalog

pytestmark = pytest.mark.duckdb

BRONZE = pa.schema(
    [
        pa.field("oid", pa.int32()),
        pa.field("cid", pa.int32()),
        pa.field("amt", pa.int32()),
    ]
)
#: three appends: 3 rows, then 2, then 1 (every snapshot's total differs)
APPENDS = (
    {"oid": [1, 2, 3], "cid": [10, None, 11], "amt": [5, 7, -1]},
    {"oid": [4, 5], "cid": [12, 13], "amt": [6, 8]},
    {"oid": [6], "cid": [14], "amt": [9]},
)

CONTRACT = """
name: sales_asof
catalogs:
  lake: {{type: sql, uri: "sqlite:///catalog.db", warehouse: iceberg}}
source:
  format: iceberg
  catalog: lake
  table: bronze.sales
  {binding}
  columns:
    oid: {{type: INTEGER, nullable: false}}
    cid: INTEGER
    amt: INTEGER
rules:
  - name: null_customer
    expect: cid IS NOT NULL
  - name: positive_amount
    expect: amt > 0
gate: {{warn_above: 0.9, fail_above: 0.95}}
outputs:
  warehouse: {warehouse}
  clean: sales_clean
  quarantine: sales_quarantine
"""


def iso(ms: int) -> str:
    """An instant as ISO 8601 with milliseconds, UTC, ``Z`` suffix (as a user writes it)."""
    when = dt.datetime.fromtimestamp(ms / 1000, dt.UTC)
    return when.isoformat(timespec="milliseconds").replace("+00:00", "Z")


def bronze(root: Path) -> list[tuple[int, int]]:
    """``bronze.sales`` with three appends ≥ 20 ms apart; the snapshot log read back by
    pyiceberg as (snapshot id, timestamp ms), oldest first."""
    cat = catalog(root / "catalog.db", root / "iceberg")
    cat.create_namespace_if_not_exists("bronze")
    table = cat.create_table("bronze.sales", schema=BRONZE)
    for rows in APPENDS:
        table.append(pa.table(rows, schema=BRONZE))
        time.sleep(0.05)
    log = cat.load_table("bronze.sales").history()
    assert len(log) == 3
    return [(e.snapshot_id, e.timestamp_ms) for e in log]


def current_at(log: list[tuple[int, int]], ms: int) -> int | None:
    """The independent answer: the last snapshot-log entry at or before ``ms``."""
    found = None
    for sid, at in log:
        if at <= ms:
            found = sid
    return found


def contract(root: Path, name: str, binding: str) -> Path:
    path = root / f"{name}.yml"
    path.write_text(CONTRACT.format(binding=binding, warehouse=f"{name}.duckdb"))
    return path


@pytest.fixture(scope="module")
def lake(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    root = tmp_path_factory.mktemp("iceberg-asof")
    return {"root": root, "log": bronze(root)}


#: as_of instants relative to the snapshot log: (entry index, offset ms)
INSTANTS = {
    "at_the_first_commit": (0, 0),
    "between_first_and_second": (0, +10),
    "a_millisecond_before_the_second": (1, -1),
    "at_the_second_commit": (1, 0),
    "after_the_last": (2, +60_000),
}


@pytest.mark.parametrize("when", list(INSTANTS))
def test_as_of_binds_the_snapshot_current_at_that_instant(lake, when):
    root, log = lake["root"], lake["log"]
    index, offset = INSTANTS[when]
    ms = log[index][1] + offset
    want = current_at(log, ms)
    assert want is not None
    path = contract(root, when, f'as_of: "{iso(ms)}"')
    r = run_cli("run", str(path), "--logical-date", "2024-01-31", "--json")
    assert r.returncode == 0, r.stderr
    metrics = json.loads(r.stdout)
    snap = metrics["input"]["snapshot"]
    assert snap["snapshot_id"] == want, (when, iso(ms), log)
    committed = dt.datetime.fromisoformat(snap["committed_at"])
    assert round(committed.timestamp() * 1000) == dict(log)[want]
    # the rows the run read are the rows of that snapshot, as pyiceberg scans them
    cat = catalog(root / "catalog.db", root / "iceberg")
    rows = cat.load_table("bronze.sales").scan(snapshot_id=want).to_arrow()
    assert snap["record_count"] == rows.num_rows == metrics["ledger"]["raw"]
    good = [r for r in rows.to_pylist() if r["cid"] is not None and r["amt"] > 0]
    assert metrics["ledger"]["clean"] == len(good)


def test_as_of_unquoted_in_yaml_is_read_as_the_same_instant(lake):
    """YAML reads an unquoted timestamp as a date-time; it binds the same snapshot."""
    root, log = lake["root"], lake["log"]
    ms = log[1][1] + 10
    path = contract(root, "unquoted", f"as_of: {iso(ms)}")
    r = run_cli("run", str(path), "--logical-date", "2024-01-31", "--json")
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["input"]["snapshot"]["snapshot_id"] == log[1][0]


def test_as_of_before_the_first_snapshot_is_a_located_error(lake):
    root, log = lake["root"], lake["log"]
    path = contract(root, "too_early", f'as_of: "{iso(log[0][1] - 1)}"')
    r = run_cli("run", str(path), "--logical-date", "2024-01-31")
    assert r.returncode == 2, r.stderr
    assert "source.as_of" in r.stderr and f"{path.name}:" in r.stderr
    assert "Traceback" not in r.stderr


def expire(root: Path, snapshot_id: int) -> None:
    """Expire one snapshot with pyiceberg's own maintenance API (removes it from the
    table metadata and from the snapshot log)."""
    cat = catalog(root / "catalog.db", root / "iceberg")
    table = cat.load_table("bronze.sales")
    table.maintenance.expire_snapshots().by_id(snapshot_id).commit()
    table = cat.load_table("bronze.sales")
    assert table.snapshot_by_id(snapshot_id) is None
    assert snapshot_id not in [e.snapshot_id for e in table.history()]


@pytest.fixture(scope="module")
def expired(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Any]:
    """Two contracts bound to the first snapshot (by id, by time) that ran; then the
    snapshot is expired."""
    root = tmp_path_factory.mktemp("iceberg-expired")
    log = bronze(root)
    first_id, first_ms = log[0]
    by_id = contract(root, "by_id", f"snapshot_id: {first_id}")
    by_time = contract(root, "by_time", f'as_of: "{iso(first_ms + 10)}"')
    for path in (by_id, by_time):
        r = run_cli("run", str(path), "--logical-date", "2024-01-31", "--json")
        assert r.returncode == 0, r.stderr
        assert json.loads(r.stdout)["input"]["snapshot"]["snapshot_id"] == first_id
    expire(root, first_id)
    return {"root": root, "log": log, "by_id": by_id, "by_time": by_time}


def error_lines(stderr: str) -> list[str]:
    return [ln for ln in stderr.splitlines() if ln.strip()]


@pytest.mark.parametrize("binding", ["by_id", "by_time"])
def test_rerun_of_an_expired_snapshot_is_a_one_line_error_naming_it(expired, binding):
    path: Path = expired[binding]
    first_id = expired["log"][0][0]
    r = run_cli("run", str(path), "--logical-date", "2024-01-31")
    assert r.returncode == 2, (r.returncode, r.stderr)
    assert "Traceback" not in r.stderr
    lines = error_lines(r.stderr)
    assert len(lines) == 2, lines  # the error, and the hint saying what to do
    line = lines[0]
    assert "snapshot" in lines[1] and "Traceback" not in lines[1], lines
    assert line.startswith(f"error: {path}:"), line  # the contract file and line
    assert "expired" in line, line
    if binding == "by_id":
        assert f"snapshot {first_id} of 'bronze.sales'" in line and "source.snapshot_id" in line
    else:
        # the log no longer says which snapshot was current then: the error names the
        # oldest one left, so the reader sees where the table's history now starts
        second_id = expired["log"][1][0]
        assert "source.as_of" in line and str(second_id) in line, line
