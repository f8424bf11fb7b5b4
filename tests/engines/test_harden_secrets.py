"""Issue 14 #5: a secret never leaves in any spelling; short secrets are refused."""

from __future__ import annotations

import json

import duckdb

from tests.conftest import run_cli

SECRET = 'pa"ss\\wörd-42'  # a quote, a backslash and non-ASCII: JSON escapes all three


def _contract(tmp_path, owner="${secret:team/owner}"):
    (tmp_path / "land").mkdir(exist_ok=True)
    (tmp_path / "land" / "a.json").write_text('{"id":1,"amount":5}\n{"id":2,"amount":-1}\n')
    c = tmp_path / "c.yml"
    c.write_text(
        f"name: events\nowner: '{owner}'\n"
        "source: {path: land, format: ndjson, columns: {id: BIGINT, amount: INTEGER}}\n"
        "rules: [{name: pos, expect: amount > 0, description: '${secret:team/owner}'}]\n"
        "gate: {warn_above: 0.9, fail_above: 0.95}\n"
        "outputs: {warehouse: wh.duckdb, clean: ev, quarantine: dlq}\n"
    )
    return c


def _leaks(text: str) -> list[str]:
    forms = {SECRET, json.dumps(SECRET)[1:-1], json.dumps(SECRET, ensure_ascii=False)[1:-1]}
    return [f for f in forms if f in text]


def test_a_secret_with_quotes_backslashes_and_non_ascii_never_appears(tmp_path):
    c = _contract(tmp_path)
    env = {"SLUICEGATE_SECRET_TEAM_OWNER": SECRET}
    human = run_cli("run", str(c), env=env)
    assert human.returncode == 0, human.stderr
    assert not _leaks(human.stdout + human.stderr)
    r = run_cli("run", str(c), "--json", env=env)
    assert r.returncode == 0, r.stderr
    assert not _leaks(r.stdout + r.stderr)
    for f in (tmp_path / "wh.runs").rglob("*.json"):
        assert not _leaks(f.read_text()), f
    con = duckdb.connect(str(tmp_path / "wh.duckdb"), read_only=True)
    try:
        rows = con.execute("SELECT metrics FROM _sluicegate_runs").fetchall()
        stored = " ".join(str(m) for (m,) in rows)
    finally:
        con.close()
    assert stored and not _leaks(stored)


def test_a_secret_shorter_than_8_characters_is_refused(tmp_path):
    c = _contract(tmp_path)
    r = run_cli("validate", str(c), env={"SLUICEGATE_SECRET_TEAM_OWNER": "1"})
    assert r.returncode == 2 and "at least 8" in r.stderr and "Traceback" not in r.stderr


def test_a_secret_in_a_source_path_is_refused_so_lineage_never_stores_it(tmp_path):
    c = _contract(tmp_path, owner="x")
    c.write_text(c.read_text().replace("path: land", "path: 'land/${secret:team/dir}'"))
    env = {"SLUICEGATE_SECRET_TEAM_DIR": "hidden-folder-1", "SLUICEGATE_SECRET_TEAM_OWNER": SECRET}
    r = run_cli("validate", str(c), env=env)
    assert r.returncode == 2 and "holds a secret" in r.stderr, r.stderr
    assert "hidden-folder-1" not in r.stdout + r.stderr
