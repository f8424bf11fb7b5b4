"""``sluicegate dlq history CONTRACT [--row KEY]``: each DLQ row's lifecycle from the
Delta change data feed (dlq/history.py), one line per commit that changed it.

Registered on the ``dlq`` group by importing this module (cli/main.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import click

from .common import contract_argument, examples
from .console import CliConsole
from .dlq_cmd import KEY_CONTEXT, _emit, _show, _warehouse_command, dlq

if TYPE_CHECKING:
    from ..contract.loader import LoadedContract


@dlq.command("history", context_settings=KEY_CONTEXT)
@contract_argument
@click.option("--row", "sk", metavar="KEY", help="Only the row with this _dlq_sk.")
@_warehouse_command
@examples(
    "sluicegate dlq history contract.yml",
    "sluicegate dlq history contract.yml --row -2059412305 --json",
)
def history(
    loaded: LoadedContract, contract: str, sk: str | None, as_json: bool, engine: str | None
) -> None:
    """Each DLQ row's lifecycle (quarantined → fixed → recycled / rejected) with the Delta
    commit version and time of every change, read from the change data feed of the
    inbox and outbox (outputs.format: delta; the DuckDB file has the audit table)."""
    from ..dlq.history import history as read_history
    from ..dlq.store import open_store

    with open_store(loaded, read_only=True, engine_name=engine) as store:
        doc = read_history(store, sk)
    if as_json:
        _emit(loaded, doc)
        return
    con = CliConsole()
    con.line(
        f"DLQ history of {doc['inbox']} and {doc['outbox']} (change data feed): "
        f"{len(doc['rows'])} row(s)"
    )
    for row in doc["rows"]:
        where = f"{_show(row['_source_file'])}:{_show(row['_source_line'])}"
        con.line(f"{row['_dlq_sk']}  ({where})")
        for e in row["events"]:
            extra = f"  changed {', '.join(e['changed'])}" if e.get("changed") else ""
            if e.get("run_id"):
                extra += f"  by {e['run_id']}"
            con.line(
                f"  {e['at']}  {e['table']:<6} v{e['version']:<4} {e['change']:<16} "
                f"{_show(e['status'])}{extra}"
            )
