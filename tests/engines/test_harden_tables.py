"""Issue 14 #8: output names never collide with sluicegate's tables or another contract's."""

from __future__ import annotations

import duckdb
import pytest

from tests.conftest import run_cli


def _contract(tmp_path, name: str, outputs: str):
    (tmp_path / "land").mkdir(exist_ok=True)
    (tmp_path / "land" / "a.json").write_text('{"id":1,"amount":5}\n{"id":1,"amount":5}\n')
    c = tmp_path / f"{name}.yml"
    c.write_text(
        f"name: {name}\n"
        "source: {path: land, format: ndjson, columns: {id: BIGINT, amount: INTEGER}}\n"
        "dedupe: {key: [id]}\n"
        "rules: [{name: pos, expect: amount > 0}]\n"
        "gate: {warn_above: 0.9, fail_above: 0.95}\n"
        f"outputs: {{warehouse: wh.duckdb, {outputs}}}\n"
    )
    return c


@pytest.mark.parametrize(
    "outputs",
    ["clean: _sluicegate_runs, quarantine: q", "clean: q_outbox, quarantine: q",
     "clean: c, quarantine: q, duplicates: q_audit", "clean: _sg_routed, quarantine: q"],
)  # fmt: skip
def test_internal_table_names_are_refused_at_validate(tmp_path, outputs):
    r = run_cli("validate", str(_contract(tmp_path, "a", outputs)))
    assert r.returncode == 2 and "[outputs." in r.stderr and "Traceback" not in r.stderr


def test_two_contracts_sharing_a_warehouse_default_to_their_own_duplicates_tables(tmp_path):
    a = _contract(tmp_path, "feed_a", "clean: a_clean, quarantine: a_q")
    b = _contract(tmp_path, "feed_b", "clean: b_clean, quarantine: b_q")
    assert run_cli("run", str(a)).returncode == 0
    r = run_cli("run", str(b))  # both used to default to the table 'duplicates'
    assert r.returncode == 0, r.stderr
    con = duckdb.connect(str(tmp_path / "wh.duckdb"), read_only=True)
    try:
        for name in ("feed_a", "feed_b"):  # each feed's one repeated id, in its own table
            got = con.execute(f"SELECT id, _source_line FROM {name}_duplicates").fetchall()
            assert got == [(1, 2)], name
        owners = dict(con.execute("SELECT table_name, contract FROM _sluicegate_owners").fetchall())
    finally:
        con.close()
    assert owners["feed_a_duplicates"] == "feed_a" and owners["feed_b_duplicates"] == "feed_b"
    assert "duplicates" not in owners


@pytest.mark.parametrize(
    "b_outputs",
    ["clean: b_clean, quarantine: b_q, duplicates: feed_a_duplicates",
     "clean: a_clean, quarantine: b_q"],
)  # fmt: skip
def test_a_table_another_contract_owns_is_refused_naming_the_owner(tmp_path, b_outputs):
    a = _contract(tmp_path, "feed_a", "clean: a_clean, quarantine: a_q")
    b = _contract(tmp_path, "feed_b", b_outputs)
    assert run_cli("run", str(a)).returncode == 0
    r = run_cli("run", str(b))
    assert r.returncode == 2, r.stderr
    assert "belongs to contract 'feed_a'" in r.stderr and "Traceback" not in r.stderr
    assert f"{b}:" in r.stderr and "outputs" in r.stderr  # located: file, key (and line)
    assert run_cli("run", str(a)).returncode == 0  # the owner still runs
