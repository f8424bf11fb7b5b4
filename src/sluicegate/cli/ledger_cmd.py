"""``sluicegate facts ledger CONTRACT``: the cumulative ledger of every run, batch and micro-batch.

Its own module so that ``facts`` (cli/facts_cmd.py) and ``watch`` (cli/watch_cmd.py) do
not import each other.
"""

from __future__ import annotations

import sys
from typing import Any

from .common import LEDGER_COLUMNS
from .console import CliConsole
from .present import emit_json, norm_path
from .reader import open_reader


def facts_ledger(loaded: Any, *, as_json: bool, wait_seconds: float) -> None:
    """``sluicegate facts ledger CONTRACT``: the cumulative ledger, per batch and in total.

    Exit 0 when every run and the total balance, 3 when anything does not.
    """
    from ..run.incremental import stream_ledger

    eng, where = open_reader(loaded, wait_seconds)
    try:
        if not eng.table_exists(loaded.contract.outputs.quarantine):
            from ..errors import UsageError

            raise UsageError(
                f"the warehouse {where} has no runs of '{loaded.contract.name}' yet",
                hint="run the contract first: sluicegate run CONTRACT [--incremental]",
            )
        led = stream_ledger(eng, loaded)
    finally:
        eng.close()
    where = norm_path(where)
    if as_json:
        emit_json(led, loaded.redactor)
    else:
        con = CliConsole()
        rows = [
            [
                r["run_id"][:12],
                r["logical_date"],
                r.get("status") or "",
                r["files"] if r["micro_batch"] else "—",
                *["" if r[k] is None else r[k] for k in LEDGER_COLUMNS],
                r.get("balanced", "?"),
            ]
            for r in led["runs"]
        ]
        tot = led["totals"]
        rows.append(
            [
                f"total ({len(led['runs'])} runs)",
                "",
                "",
                tot["files"],
                *["" if tot[k] is None else tot[k] for k in LEDGER_COLUMNS],
                led["balanced"],
            ]
        )
        headers = ["run", "date", "status", "files", *LEDGER_COLUMNS, "balanced"]
        if any("offsets" in r for r in led["runs"]):  # a Kafka source: offsets per batch
            from .watch_cmd import offsets_text

            headers[3] = "offsets"
            for row, r in zip(rows, led["runs"], strict=False):
                row[3] = offsets_text(r.get("offsets")) if r["micro_batch"] else "—"
        con.table(
            f"Ledger of {loaded.contract.name} ({where}): {led['equation']}",
            headers,
            rows,
            numeric={"files", *LEDGER_COLUMNS},
        )
        con.line("run: the run id's first 12 characters (--json has all of it)")
        con.line("files: the files of a micro-batch (— a batch run reads the whole path)")
        for v in led["violations"]:
            con.error(f"{v['check']}: {v['detail']}")
    sys.exit(0 if led["balanced"] else 3)
