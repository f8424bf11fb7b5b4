"""The embedded engine publishes a staged Delta table by committing its own files.

Every row is counted through a reader sluicegate did not write (delta-rs's file list and
pyarrow), and the number of Parquet writes is counted with a spy on the store's one write
method: a publish that adopts its staged files writes each changed table once (its
shadow), one that rewrites them writes it twice.
"""

from __future__ import annotations

import os
from pathlib import Path

import pyarrow as pa
import pytest
import sqlglot
from deltalake import DeltaTable

from sluicegate.compile.outputs import insert_into
from sluicegate.engines import delta_journal, delta_rs, open_engine
from sluicegate.engines.delta_adopt import _place_all, staged_files
from sluicegate.engines.warehouse_files import Files
from tests.engines.conformance.test_storage import (
    CHANGED,
    D1,
    D2,
    D3,
    INITIAL,
    _replace_d1,
    day,
    delta_rows,
    read,
    rows,
)


class Crash(BaseException):
    """Stands for the process dying at a fault point."""


def _open(wh: Path, fault=None):  # noqa: ANN001, ANN202
    return open_engine("duckdb", str(wh), table_format="delta", fault=fault)


@pytest.fixture
def writes(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """Every Delta table the store writes rows into, in order."""
    seen: list[str] = []
    real = delta_rs.DeltaRsStore.write

    def spy(self, path, data, **kwargs):  # noqa: ANN001, ANN202
        seen.append(os.path.basename(path))
        if ".sluicegate" in path:  # a stage: DuckDB's rows streamed, never one whole table
            assert isinstance(data, pa.RecordBatchReader), type(data)
        return real(self, path, data, **kwargs)

    monkeypatch.setattr(delta_rs.DeltaRsStore, "write", spy)
    return seen


def _data_files(table: Path) -> set[str]:
    return {str(p.relative_to(table)) for p in table.rglob("*.parquet")}


def test_a_new_table_and_a_date_replace_commit_the_staged_files(tmp_path: Path, writes):
    wh = tmp_path / "wh"
    eng = _open(wh)
    eng.create_table_as("t", rows((1, "a", D1, 10), (2, "b", D1, 20), (3, "c", D2, 30)))
    assert writes == ["t"]  # the shadow only: its file became the table's
    assert delta_rows(wh / "t") == INITIAL
    first = _data_files(wh / "t")
    with eng.transaction():
        _replace_d1(eng)
        eng.execute(insert_into("t", rows((9, "z", D3, 90))))
    assert writes == ["t", "t"]
    # D2's file is the one committed at version 0; D1 and D3 are new files
    assert delta_rows(wh / "t") == [*CHANGED, (9, "z", day(D3), 90)]
    assert delta_rows(wh / "t", version=0) == INITIAL
    live = {u.split("/t/", 1)[1] for u in DeltaTable(str(wh / "t")).file_uris()}
    assert [f for f in live if "2024-01-02" in f] == [f for f in first if "2024-01-02" in f]
    history = DeltaTable(str(wh / "t")).history()
    assert [h["version"] for h in history] == [1, 0]
    assert all(h["userMetadata"].startswith(delta_journal.MARKER) for h in history)
    assert not any((wh / ".sluicegate" / "delta" / "staging").iterdir())
    eng.close()
    again = _open(wh)  # a new reader sees the commit
    assert read(again) == [*CHANGED, (9, "z", day(D3), 90)]
    again.close()


def test_a_changed_schema_and_the_dlq_are_rewritten(tmp_path: Path, writes):
    wh = tmp_path / "wh"
    eng = _open(wh)
    eng.create_table_as("t", rows((1, "a", D1, 10)))
    wider = sqlglot.parse_one(
        "SELECT 1 AS k, 'a' AS s, DATE '2024-01-01' AS _logical_date, 10 AS n, 'x' AS extra",
        read="duckdb",
    )
    eng.create_table_as("t", wider)  # the same name, another shape: replaced whole
    assert writes == ["t", "t", "t"]  # the new shape is written by the rewrite
    assert DeltaTable(str(wh / "t")).schema().fields[-1].name == "extra"
    dlq = sqlglot.parse_one(
        "SELECT 'k1' AS _dlq_sk, DATE '2024-01-01' AS _logical_date, 'quarantined' AS s",
        read="duckdb",
    )
    eng.create_table_as("d", dlq)
    assert writes[-2:] == ["d", "d"]  # keyed: MERGEd from its rows, with the change feed
    eng.close()


def test_links_left_by_a_crash_are_committed_once(tmp_path: Path, writes):
    """The process dies after the journal and after hard-linking the staged files into the
    table's folder, before the commit: the next open commits those same files, once."""
    wh = tmp_path / "wh"
    armed = {"on": False}

    def fault(point: str) -> None:
        if armed["on"] and point == "delta:journaled":
            raise Crash(point)

    eng = _open(wh, fault)
    eng.create_table_as("t", rows((1, "a", D1, 10), (2, "b", D1, 20), (3, "c", D2, 30)))
    armed["on"] = True
    eng.begin()
    _replace_d1(eng)
    with pytest.raises(Crash):
        eng.commit()
    internal = wh / ".sluicegate" / "delta"
    (tx,) = [p for p in (internal / "staging").iterdir()]
    shadow = tx / "t"
    staged = staged_files(str(shadow))
    assert staged is not None and staged.partition_columns == ["_logical_date"]
    assert _place_all(Files(str(wh)), str(shadow), str(wh / "t"), staged.adds)  # the dead run
    assert all((shadow / a["path"]).exists() for a in staged.adds)  # linked, not moved
    assert delta_rows(wh / "t") == INITIAL  # links are no commit
    delta_journal.ACTIVE.clear()
    before = len(writes)
    reopened = _open(wh)
    assert any("completed an interrupted publish of t" in n for n in reopened.notices)
    assert len(writes) == before  # the recovery committed the linked files
    assert delta_rows(wh / "t") == CHANGED
    assert reopened.store.version("t") == 1
    assert not list((internal / "journal").glob("*.json"))
    reopened.close()


def test_a_shadow_that_is_not_one_plain_commit_is_not_adopted(tmp_path: Path):
    shadow = tmp_path / "s"
    (shadow / "_delta_log").mkdir(parents=True)
    assert staged_files(str(shadow)) is None  # no commit
    (shadow / "_delta_log" / "00000000000000000000.json").write_text(
        '{"metaData": {"schemaString": "{}", "partitionColumns": []}}\n'
        '{"remove": {"path": "x.parquet"}}\n'
    )
    assert staged_files(str(shadow)) is None  # a remove: not a first overwrite
    (shadow / "_delta_log" / "00000000000000000000.json").write_text(
        '{"metaData": {"schemaString": "{}", "partitionColumns": []}}\n'
        '{"add": {"path": "../elsewhere.parquet", "size": 1}}\n'
    )
    assert staged_files(str(shadow)) is None  # a path outside the shadow


def _s3(server):  # noqa: ANN001, ANN202
    from sluicegate.engines.object_store import S3Settings
    from tests.servers.s3 import ACCESS_KEY_ID, SECRET_ACCESS_KEY

    server.create_bucket("adopt")
    return S3Settings(
        endpoint=server.endpoint,
        path_style=True,
        allow_http=True,
        access_key_id=ACCESS_KEY_ID,
        secret_access_key=SECRET_ACCESS_KEY,
    )


def test_an_s3_warehouse_commits_its_staged_objects(s3_server, writes):
    """On S3 the staged objects are copied by the store itself (``CopyObject``) into the
    table's prefix and committed there: each table written once, as locally."""
    from tests.engines.s3_case import delta_rows as s3_rows

    eng = open_engine("duckdb", "s3://adopt/wh", table_format="delta", s3=_s3(s3_server))
    try:
        eng.create_table_as("t", rows((1, "a", D1, 10), (2, "b", D1, 20), (3, "c", D2, 30)))
        with eng.transaction():
            _replace_d1(eng)
    finally:
        eng.close()
    assert writes == ["t", "t"]  # each a stage only: no rewrite of its rows
    got = sorted(
        (r["k"], r["s"], r["_logical_date"], r["n"]) for r in s3_rows(s3_server, "s3://adopt/wh/t")
    )
    assert got == sorted(CHANGED)  # read by delta-rs and pyarrow, not sluicegate
    live = DeltaTable("s3://adopt/wh/t", storage_options=s3_server.storage_options()).file_uris()
    assert live and all(u.startswith("s3://adopt/wh/t/") for u in live)
    staged = s3_server.keys("adopt", "wh/.sluicegate/delta/staging/")
    assert [k for k in staged if not k.endswith("/")] == []  # the stage removed


def test_an_object_already_placed_on_s3_is_kept_and_another_refused(s3_server):
    files = Files("s3://adopt/place", _s3(s3_server))
    s3_server.put("adopt", "place/stage/p.parquet", b"staged bytes")
    adds = [{"path": "p.parquet"}]
    stage, table = "s3://adopt/place/stage", "s3://adopt/place/t"
    assert _place_all(files, stage, table, adds)
    assert _place_all(files, stage, table, adds)  # an interrupted attempt's copy: kept
    s3_server.put("adopt", "place/t/p.parquet", b"another object")
    assert not _place_all(files, stage, table, adds)  # not the staged one: rewrite instead
