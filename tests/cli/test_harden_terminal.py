"""Issue 14 #10: terminal escape sequences in data never reach an operator's terminal raw."""

from __future__ import annotations

import json

from tests.conftest import run_cli

EVIL = "\x1b]0;pwned\x07\x1b[2J\x9b31m\u202eevil"


def test_dlq_list_and_show_escape_control_characters(tmp_path):
    (tmp_path / "land").mkdir()
    (tmp_path / "land" / "a.json").write_text(
        json.dumps({"id": 1, "amount": -1, "note": EVIL}) + "\n" + EVIL + "\n"
    )
    c = tmp_path / "c.yml"
    c.write_text(
        "name: events\n"
        "source: {path: land, format: ndjson, columns: {id: BIGINT, amount: INTEGER, "
        "note: VARCHAR}}\n"
        "rules: [{name: pos, expect: amount > 0}]\n"
        "gate: {warn_above: 1, fail_above: 1}\n"
        "outputs: {warehouse: wh.duckdb, clean: ev, quarantine: dlq}\n"
    )
    assert run_cli("run", str(c), "-q").returncode == 0
    listed = run_cli("dlq", "list", str(c))
    assert listed.returncode == 0, listed.stderr
    rows = json.loads(run_cli("dlq", "list", str(c), "--json").stdout)["rows"]
    assert len(rows) == 2
    shown = [run_cli("dlq", "show", str(c), str(r["_dlq_sk"])) for r in rows]
    for out in [listed, *shown]:
        assert out.returncode == 0, out.stderr
        for ch in ("\x1b", "\x07", "\x9b", "\u202e"):
            assert ch not in out.stdout + out.stderr, (ch, out.stdout)
    shown_text = "".join(s.stdout for s in shown)  # escaped, as text or as JSON
    assert "\\x1b" in shown_text or "\\u001b" in shown_text
