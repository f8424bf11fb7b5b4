"""``sluicegate snapshot``: the table versions a run published (time travel to one run)."""

from __future__ import annotations

import click

from ..errors import UsageError
from .common import CONTEXT, contract_argument, engine_option, examples, json_option, var_option
from .common import handled as _handled
from .common import parse_vars as _vars
from .console import CliConsole
from .present import emit_json, norm_path


@click.command("snapshot", context_settings=CONTEXT)
@contract_argument
@click.option("--run", "run_id", metavar="ID", help="A run id (default: the latest run).")
@engine_option()
@json_option()
@var_option()
@_handled
@examples("sluicegate snapshot contract.yml", "sluicegate snapshot contract.yml --json")
def snapshot_cmd(
    contract: str,
    run_id: str | None,
    engine: str | None,
    as_json: bool,
    variables: tuple[str, ...],
) -> None:
    """The version of every table a run of CONTRACT published.

    On a Delta warehouse each table commits on its own; the run record names the version
    each table got, so reading every table at that version (Spark:
    ``versionAsOf``; delta-rs: ``DeltaTable(path, version=...)``) shows exactly that run.
    A DuckDB-file warehouse publishes all tables in one transaction and lists none.
    """
    from ..compile.contract_check import load_contract
    from ..report.reader import unknown_run
    from ..run.snapshot import read_snapshot
    from ..workspace import Access, Workspace, open_engine_for

    loaded = load_contract(contract, variables=_vars(variables))
    c = loaded.contract
    Workspace(loaded).require("snapshot")
    eng = open_engine_for(loaded, Access.READ, engine=engine)
    try:
        snap = read_snapshot(eng, c.name, run_id)
        if snap is None and run_id is not None:
            where = norm_path(Workspace(loaded).warehouse)
            raise unknown_run(eng, c.name, run_id, f"no run {run_id} of {c.name} in {where}")
    finally:
        eng.close()
    if snap is None:
        what = f"run {run_id}" if run_id else "published run"
        raise UsageError(
            f"no {what} of {c.name} in {norm_path(Workspace(loaded).warehouse)}",
            hint="list the runs with: sluicegate facts ledger CONTRACT"
            if run_id
            else "run the contract first: sluicegate run CONTRACT",
        )
    if as_json:
        emit_json(snap, loaded.redactor)
        return
    con = CliConsole()
    con.line(
        f"run {snap['run_id']} ({snap['logical_date']}, {snap['status']}, "
        f"published {snap['published_at']}) on {snap['format']}"
    )
    if snap["tables"]:
        con.table(
            "table versions",
            ["table", "version"],
            [[t, str(v)] for t, v in snap["tables"].items()],
        )
    else:
        con.line("one transaction published every table (no per-table versions)")
