"""Issue 14, reproductions 1 and 2: the proof cannot be fooled by file names or rewrites.

Each test runs the real CLI on a real DuckDB warehouse and reads the published table back.
"""

from __future__ import annotations

import json
from pathlib import Path

import duckdb

from tests.conftest import run_cli, run_cli_paused

CONTRACT = (
    "name: events\n"
    "source: {path: land, format: ndjson, columns: {id: BIGINT, amount: INTEGER}}\n"
    "rules: [{name: pos, expect: amount > 0}]\n"
    "outputs: {warehouse: wh.duckdb, clean: ev, quarantine: dlq}\n"
)


def _setup(tmp_path: Path) -> Path:
    (tmp_path / "land").mkdir()
    c = tmp_path / "c.yml"
    c.write_text(CONTRACT)
    return c


def _ids(tmp_path: Path) -> list[int]:
    con = duckdb.connect(str(tmp_path / "wh.duckdb"), read_only=True)
    try:
        return [r[0] for r in con.execute("SELECT id FROM ev ORDER BY id").fetchall()]
    finally:
        con.close()


def test_glob_characters_in_a_file_name_never_substitute_another_file(tmp_path):
    c = _setup(tmp_path)
    (tmp_path / "land" / "[_]x.json").write_text('{"id":1,"amount":5}\n')
    (tmp_path / "land" / "_x.json").write_text('{"id":666,"amount":6}\n')  # hidden: not data
    r = run_cli("run", str(c), "--json")
    assert r.returncode == 0, r.stderr
    assert _ids(tmp_path) == [1]
    files = {f["path"] for f in json.loads(r.stdout)["input"]["files"]}
    assert files == {str(tmp_path / "land" / "[_]x.json")}


def test_a_bracketed_name_beside_its_match_does_not_block_the_feed(tmp_path):
    c = _setup(tmp_path)
    (tmp_path / "land" / "[a].json").write_text('{"id":1,"amount":5}\n')
    (tmp_path / "land" / "a.json").write_text('{"id":2,"amount":6}\n{"id":3,"amount":7}\n')
    (tmp_path / "land" / "b*?.json").write_text('{"id":4,"amount":8}\n')
    r = run_cli("run", str(c))
    assert r.returncode == 0, r.stderr
    assert _ids(tmp_path) == [1, 2, 3, 4]


def test_ledger_checks_lineage_files_against_the_binding():
    """The per-file check itself: a file not bound, or a count that differs, is a violation."""
    from sluicegate.run.bind import Binding, BoundFile
    from sluicegate.run.publish import file_violations

    b = Binding(files=[BoundFile("/l/a.json", 1, 0.0, "h", 2, 0)])
    assert file_violations(b, {"/l/a.json": 2}) == []
    subst = file_violations(b, {"/l/_x.json": 2})
    assert {v["check"] for v in subst} == {"lineage"} and len(subst) == 2
    assert file_violations(b, {"/l/a.json": 1})[0]["detail"].endswith("outputs hold 1")


def test_a_file_rewritten_between_bind_and_read_is_refused_with_exit_3(tmp_path):
    c = _setup(tmp_path)
    data = tmp_path / "land" / "a.json"
    data.write_text('{"id":1,"amount":5}\n{"id":2,"amount":6}\n')
    r = run_cli_paused(
        ["run", str(c), "--json"],
        "after_bind",
        lambda: data.write_text('{"id":7,"amount":5}\n{"id":8,"amount":6}\n'),  # same count
        cwd=tmp_path,
    )
    out, err = r.stdout, r.stderr
    assert r.returncode == 3, (out, err)
    assert "input_changed" in err and "Traceback" not in err
    assert not (tmp_path / "wh.duckdb").exists() or not _has_rows(tmp_path)


def _has_rows(tmp_path: Path) -> bool:
    con = duckdb.connect(str(tmp_path / "wh.duckdb"), read_only=True)
    try:
        tables = {r[0] for r in con.execute("SELECT table_name FROM duckdb_tables()").fetchall()}
        return "ev" in tables and con.execute("SELECT count(*) FROM ev").fetchone()[0] > 0
    finally:
        con.close()
