"""The embedded engine reads a published Iceberg table as a lazy dataset over its data
files where those alone are its rows, and through pyiceberg otherwise
(engines/iceberg_store.py ``dataset``). Each read is checked against pyiceberg's own scan.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.dataset as ds
import pytest

from sluicegate.engines.iceberg_catalog import CatalogSpec
from sluicegate.engines.iceberg_store import IcebergStore
from tests.iceberg_read import catalog

NS = "lazy"


@pytest.fixture
def store(tmp_path: Path) -> IcebergStore:
    cat = catalog(tmp_path / "catalog.db", tmp_path / "iceberg")
    cat.create_namespace(NS)
    t = cat.create_table(f"{NS}.t", schema=pa.schema([("k", pa.int64()), ("v", pa.string())]))
    t.append(pa.table({"k": [1, 2], "v": ["a", "b"]}))
    t.append(pa.table({"k": [3], "v": ["c"]}))
    t.delete("k = 2")  # copy-on-write: a file rewritten, no delete files
    spec = CatalogSpec(
        "lake", f"sqlite:///{tmp_path / 'catalog.db'}", f"file://{tmp_path / 'iceberg'}"
    )
    return IcebergStore(spec, NS, str(tmp_path / "wh"))


def _rows(data: pa.Table | ds.Dataset) -> list[dict]:
    table = data.to_table() if isinstance(data, ds.Dataset) else data
    return sorted(table.to_pylist(), key=lambda r: r["k"])


def test_a_plain_table_is_read_lazily_from_its_files(store: IcebergStore):
    data, version = store.dataset("t")
    assert isinstance(data, ds.Dataset)
    truth = store.load("t")
    assert version == truth.current_snapshot().snapshot_id
    assert (
        _rows(data)
        == _rows(truth.scan().to_arrow())
        == [
            {"k": 1, "v": "a"},
            {"k": 3, "v": "c"},
        ]
    )
    first = truth.snapshots()[0].snapshot_id  # time travel reads that snapshot's files
    assert _rows(store.dataset("t", first)[0]) == [{"k": 1, "v": "a"}, {"k": 2, "v": "b"}]


def test_an_evolved_schema_is_read_by_pyiceberg(store: IcebergStore):
    with store.load("t").update_schema() as u:
        u.rename_column("v", "w")  # the files still say v: only field ids tell
    data, _ = store.dataset("t")
    assert isinstance(data, pa.Table)
    assert _rows(data) == [{"k": 1, "w": "a"}, {"k": 3, "w": "c"}]


def test_a_missing_file_is_left_to_pyiceberg(store: IcebergStore, tmp_path: Path):
    (tmp_path / "moved").mkdir()
    path = next(iter(store.load("t").scan().plan_files())).file.file_path
    local = Path(path.removeprefix("file://"))
    local.rename(tmp_path / "moved" / local.name)
    with pytest.raises(FileNotFoundError):  # pyiceberg's own error names the file
        store.dataset("t")
