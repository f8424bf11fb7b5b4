"""Issue 14 on the Spark engine: exact file lists (#1) and no Java from rules (#3)."""

from __future__ import annotations

import json
import subprocess

import pytest

from tests.conftest import SLUICEGATE, run_cli

pytestmark = pytest.mark.spark

CONTRACT = (
    "name: events\n"
    "source: {path: land, format: ndjson, columns: {id: BIGINT, amount: INTEGER}}\n"
    "rules: [{name: pos, expect: amount > 0}]\n"
    "outputs: {warehouse: wh, clean: ev, quarantine: dlq}\n"
)


def test_spark_reads_exactly_the_bound_files_and_refuses_reflect(tmp_path):
    land = tmp_path / "land"
    land.mkdir()
    (land / "[_]x.json").write_text('{"id":1,"amount":5}\n')
    (land / "_x.json").write_text('{"id":666,"amount":6}\n')  # hidden: never data
    (land / "[a].json").write_text('{"id":2,"amount":5}\n')
    (land / "a.json").write_text('{"id":3,"amount":5}\n{"id":4,"amount":5}\n')
    c = tmp_path / "c.yml"
    c.write_text(CONTRACT)
    # one Spark run (its own JVM); generous: a loaded 2-core machine took ~10 minutes
    r = subprocess.run(
        [*SLUICEGATE, "run", str(c), "--engine", "spark", "--json"],
        capture_output=True,
        text=True,
        timeout=1800,
    )
    assert r.returncode == 0, r.stderr[-3000:]
    led = json.loads(r.stdout)["ledger"]
    assert led["balanced"] and led["raw"] == led["clean"] == 4

    marker = tmp_path / "pwned"
    hostile = f"reflect('java.io.File','createTempFile','x','.txt', '{marker}') IS NOT NULL"
    for expect in (hostile, "java_method('java.lang.System','exit', 3) IS NULL"):
        c.write_text(CONTRACT.replace("amount > 0", json.dumps(expect)))
        r = run_cli("run", str(c), "--engine", "spark")
        assert r.returncode == 2 and "may not call" in r.stderr, r.stderr[-2000:]
        assert "Traceback" not in r.stderr
    assert not marker.exists()
