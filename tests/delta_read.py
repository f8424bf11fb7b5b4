"""Delta tables read by delta-rs (``deltalake``), not by sluicegate or Spark: the
independent reader of the tests. Files come from the table's log (``get_add_actions``),
read with pyarrow; partition values from the log too. (``to_pyarrow_table()`` is avoided:
with deltalake 1.6.6 it can abort the interpreter at exit.)"""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any
from urllib.parse import unquote


def delta_dicts(folder: Path | str, version: int | None = None) -> list[dict[str, Any]]:
    """Every row of the Delta table at ``folder`` (as of ``version``) as a dict."""
    import pyarrow.parquet as pq
    from deltalake import DeltaTable

    table = DeltaTable(str(folder), version=version)
    # The table's schema names the columns, as for any Delta reader: a data file may hold
    # more (delta-rs 1.6.6's MERGE into a table with the change data feed on writes
    # ``_change_type`` and ``__is_cdc`` into its data files, all False/NULL).
    names = [f.name for f in table.schema().fields]
    out: list[dict[str, Any]] = []
    import pyarrow as pa

    for action in pa.table(table.get_add_actions(flatten=True)).to_pylist():
        parts = {
            k.removeprefix("partition."): v for k, v in action.items() if k.startswith("partition.")
        }
        path = unquote(action["path"])
        full = path if "://" in path or os.path.isabs(path) else os.path.join(str(folder), path)
        for row in pq.read_table(full).to_pylist():
            row.update(parts)
            out.append({name: row.get(name) for name in names})
    return out


def is_delta(folder: Path | str) -> bool:
    return (Path(folder) / "_delta_log").is_dir()
