"""``sluicegate dlq`` — the operator's side of the dead-letter queue.

List and inspect quarantined rows, fix values (checked with the reader's cast rules),
mark rows fixed or rejected, recycle fixed rows through the contract, and see the run
ledger extended with the DLQ. Every change is audited (``--by``, default ``$USER``).
Every command accepts ``--json`` and then prints exactly one JSON document on stdout.
"""

from __future__ import annotations

import json
import os
import sys
from collections.abc import Callable
from functools import wraps
from typing import TYPE_CHECKING, Any

import click

from ..contract.tokens import redact_secrets
from ..errors import UsageError
from .common import (
    CONTEXT,
    LEDGER_COLUMNS,
    contract_argument,
    engine_option,
    handled,
    json_option,
    jsonable,
    logical_date_option,
    parse_vars,
    var_option,
)
from .console import CliConsole

if TYPE_CHECKING:
    from ..contract.loader import LoadedContract

#: Keys are signed 64-bit numbers: ``-2059…`` must reach the command as an argument.
KEY_CONTEXT = {**CONTEXT, "ignore_unknown_options": True}

by_option = click.option(
    "--by", metavar="WHO", help="Who makes the change, for the audit table (default: $USER)."
)


def _warehouse_command(fn: Callable[..., None]) -> Callable[..., None]:
    """The last options of every dlq command (--json, --var, --logical-date, --engine) and
    its error handler; ``fn`` gets the loaded contract first, instead of --var and
    --logical-date."""

    @wraps(fn)
    def load_first(
        *, contract: str, variables: tuple[str, ...], logical_date: str | None, **kwargs: Any
    ) -> None:
        from ..compile.contract_check import load_contract

        loaded = load_contract(contract, variables=parse_vars(variables), logical_date=logical_date)
        fn(loaded, contract=contract, **kwargs)

    options = (
        json_option(),
        var_option(),
        logical_date_option(),
        engine_option("Engine of the warehouse (default: the contract's, else duckdb)."),
    )
    command: Callable[..., None] = handled(load_first)
    for option in reversed(options):  # as if stacked in this order above the function
        command = option(command)
    return command


def _emit(loaded: Any, doc: Any) -> None:
    text = json.dumps(doc, indent=2, default=jsonable, ensure_ascii=False)
    click.echo(redact_secrets(loaded.redactor(text)))


def _actor(by: str | None) -> str:
    from ..dlq.store import default_actor

    return by or default_actor()


def _where_line(row: dict[str, Any]) -> str:
    return f"{os.path.basename(str(row.get('_source_file')))}:{row.get('_source_line')}"


def _show(v: Any) -> str:
    return "NULL" if v is None else str(v)


@click.group(context_settings=CONTEXT)
def dlq() -> None:
    """The dead-letter queue: list, show, fix, mark, recycle, ledger.

    \b
    A typical session (docs/dlq.md walks through it):
      sluicegate dlq list contract.yml --status quarantined
      sluicegate dlq show contract.yml KEY
      sluicegate dlq fix contract.yml KEY --set amt=5
      sluicegate dlq fix contract.yml --where "_reason = 'unknown_customer'" --set cid=10
      sluicegate dlq mark contract.yml KEY --status rejected
      sluicegate dlq recycle contract.yml
      sluicegate dlq ledger contract.yml

    Statuses: quarantined → fixed → recycled, or back to quarantined when a fixed row
    still fails (attempts + 1); rejected is final and counted in the ledger.
    """


@dlq.command("list", context_settings=CONTEXT)
@contract_argument
@click.option("--status", type=click.Choice(["quarantined", "fixed", "recycled", "rejected"]))
@click.option("--reason", metavar="RULE", help="Only rows whose _reason is RULE.")
@click.option("--limit", type=int, metavar="N", help="At most N rows.")
@_warehouse_command
def list_cmd(
    loaded: LoadedContract,
    contract: str,
    status: str | None,
    reason: str | None,
    limit: int | None,
    as_json: bool,
    engine: str | None,
) -> None:
    """List inbox rows (oldest lineage first) with their key, status and values."""
    from ..dlq.store import open_store

    with open_store(loaded, read_only=True, engine_name=engine) as store:
        rows = store.rows(status=status, reason=reason, limit=limit)
        counts = store.by_status()
        data_cols = store.data_columns()
        inbox = store.tables.inbox
    if as_json:
        _emit(
            loaded,
            {
                "contract": loaded.contract.name,
                "inbox": inbox,
                "filters": {"status": status, "reason": reason, "limit": limit},
                "by_status": counts,
                "count": len(rows),
                "rows": rows,
            },
        )
        return
    con = CliConsole()
    con.table(
        f"{inbox}: {len(rows)} row(s)"
        + (f" with status {status}" if status else "")
        + (f" and reason {reason}" if reason else "")
        + "  ("
        + ", ".join(f"{s} {n}" for s, n in counts.items())
        + ")",
        ["_dlq_sk", "status", "attempts", "reason", "line", *data_cols],
        [
            [
                r["_dlq_sk"],
                r["_dlq_status"],
                r["_dlq_attempts"],
                r["_reason"],
                _where_line(r),
                *[_show(r.get(c)) for c in data_cols],
            ]
            for r in rows
        ],
    )


@dlq.command(context_settings=KEY_CONTEXT)
@contract_argument
@click.argument("sk")
@_warehouse_command
def show(loaded: LoadedContract, contract: str, sk: str, as_json: bool, engine: str | None) -> None:
    """Show one inbox row in full, with its audit history."""
    from ..dlq.audit import audit_history
    from ..dlq.store import open_store

    with open_store(loaded, read_only=True, engine_name=engine) as store:
        row = store.row(sk)
        audit = (
            store.engine.fetch_dicts(audit_history(store.tables, sk))
            if store.engine.table_exists(store.tables.audit)
            else []
        )
    if as_json:
        _emit(loaded, {"row": row, "audit": audit})
        return
    lines = [f"{k:<20} {_show(v)}" for k, v in row.items()]
    text = "\n".join(lines)
    click.echo(redact_secrets(loaded.redactor(text)))
    CliConsole().table(
        f"audit of {sk}",
        ["changed_at", "action", "changed_by", "before", "after"],
        [
            [
                a["changed_at"],
                a["action"],
                a["changed_by"],
                _show(a["before_json"]),
                _show(a["after_json"]),
            ]
            for a in audit
        ],
    )


def _parse_sets(sets: tuple[str, ...], nulls: tuple[str, ...]) -> dict[str, str | None]:
    out: dict[str, str | None] = {}
    for s in sets:
        if "=" not in s:
            raise UsageError(f"--set '{s}' is not COLUMN=VALUE")
        k, v = s.split("=", 1)
        out[k.strip()] = v
    for n in nulls:
        out[n.strip()] = None
    return out


def _report_action(loaded: Any, result: Any, as_json: bool, contract: str) -> None:
    doc = result.as_dict()
    if as_json:
        _emit(loaded, doc)
        return
    con = CliConsole()
    verb = "fixed" if result.action == "fix" else f"marked {result.status}"
    if not result.keys:
        con.line(f"no editable row matched: nothing {verb}")
        return
    con.line(f"{verb} {len(result.keys)} row(s): {', '.join(result.keys)}")
    if result.status == "fixed":
        con.line(f"recycle them with: sluicegate dlq recycle {contract}")


@dlq.command(context_settings=KEY_CONTEXT)
@contract_argument
@click.argument("keys", nargs=-1, metavar="[SK]...")
@click.option(
    "--where", metavar="PREDICATE", help="Fix every editable row matching this SQL predicate."
)
@click.option(
    "--set", "sets", multiple=True, metavar="COLUMN=VALUE", help="New value (repeatable)."
)
@click.option("--set-null", "nulls", multiple=True, metavar="COLUMN", help="Set COLUMN to NULL.")
@by_option
@_warehouse_command
def fix(
    loaded: LoadedContract,
    contract: str,
    keys: tuple[str, ...],
    where: str | None,
    sets: tuple[str, ...],
    nulls: tuple[str, ...],
    by: str | None,
    as_json: bool,
    engine: str | None,
) -> None:
    """Edit values of rows (by key, or --where) and mark them fixed.

    Each value is checked against the column's declared type with the reader's cast
    rules before anything changes. --where takes one boolean expression over the row's
    columns (and _reason, _dlq_status, _source_file, _source_line, …), checked like a
    rule: statements and subqueries are refused (exit 2).
    """
    from ..dlq.lifecycle import fix as fix_rows
    from ..dlq.store import open_store

    with open_store(loaded, engine_name=engine) as store:
        result = fix_rows(
            store, keys=list(keys), where=where, sets=_parse_sets(sets, nulls), by=_actor(by)
        )
    _report_action(loaded, result, as_json, contract)


@dlq.command(context_settings=KEY_CONTEXT)
@contract_argument
@click.argument("keys", nargs=-1, metavar="[SK]...")
@click.option("--status", required=True, type=click.Choice(["fixed", "rejected"]))
@click.option(
    "--where", metavar="PREDICATE", help="Mark every editable row matching this predicate."
)
@by_option
@_warehouse_command
def mark(
    loaded: LoadedContract,
    contract: str,
    keys: tuple[str, ...],
    status: str,
    where: str | None,
    by: str | None,
    as_json: bool,
    engine: str | None,
) -> None:
    """Mark rows fixed (ready to recycle as they are) or rejected (final, counted)."""
    from ..dlq.lifecycle import mark as mark_rows
    from ..dlq.store import open_store

    with open_store(loaded, engine_name=engine) as store:
        result = mark_rows(store, keys=list(keys), where=where, status=status, by=_actor(by))
    _report_action(loaded, result, as_json, contract)


def _ledger_table(con: CliConsole, led: dict[str, Any]) -> None:
    rows = [
        [
            r["run_id"],
            r["logical_date"],
            *[_show(r[c]) for c in LEDGER_COLUMNS],
            r.get("balanced", "?"),
        ]
        for r in led["runs"]
    ]
    tot = led["totals"]
    rows.append(["total", "", *[_show(tot[c]) for c in LEDGER_COLUMNS], led["balanced"]])
    con.table(
        f"DLQ ledger: {led['equation']}",
        ["run", "date", *LEDGER_COLUMNS, "balanced"],
        rows,
    )
    rc = led["recycled"]
    con.line(
        f"clean table {tot['clean_table']} = clean {tot['clean']} + recycled copies "
        f"{rc['recycled_copies_in_clean']}; outbox {rc['outbox']}; "
        + ("balanced" if led["balanced"] else "NOT BALANCED")
    )
    for v in led["violations"]:
        con.error(f"{v['check']}: {v['detail']}")


@dlq.command(context_settings=CONTEXT)
@contract_argument
@by_option
@_warehouse_command
def recycle(
    loaded: LoadedContract, contract: str, by: str | None, as_json: bool, engine: str | None
) -> None:
    """Re-validate fixed rows through the contract: clean + outbox, or back to quarantine.

    Exit 0 when the ledger balances afterwards, 3 when it does not.
    """
    from ..dlq.ledger import dlq_ledger
    from ..dlq.store import open_store
    from ..run.recycle import recycle as recycle_rows

    with open_store(loaded, engine_name=engine) as store:
        result = recycle_rows(store, by=_actor(by))
        result["ledger"] = dlq_ledger(store)
    if as_json:
        _emit(loaded, result)
    else:
        con = CliConsole()
        con.line(
            f"recycle {result['recycle_run_id']}: {result['considered']} fixed row(s) "
            f"re-validated — {result['recycled']} recycled to the clean table, "
            f"{result['requarantined']} back to quarantine"
            + (
                f", {result['already_recycled']} already in the outbox (restored to recycled)"
                if result["already_recycled"]
                else ""
            )
        )
        for r in result["requarantined_rows"]:
            con.line(
                f"  still failing: {r['_dlq_sk']} {r['_reason']} (attempt {r['_dlq_attempts']})"
            )
        _ledger_table(con, result["ledger"])
    sys.exit(0 if result["ledger"]["balanced"] else 3)


@dlq.command(context_settings=CONTEXT)
@contract_argument
@_warehouse_command
def ledger(loaded: LoadedContract, contract: str, as_json: bool, engine: str | None) -> None:
    """The run ledger extended with the DLQ statuses, per run and in total (exit 3 if off)."""
    from ..dlq.ledger import dlq_ledger
    from ..dlq.store import open_store

    with open_store(loaded, read_only=True, engine_name=engine) as store:
        led = dlq_ledger(store)
    if as_json:
        _emit(loaded, led)
    else:
        _ledger_table(CliConsole(), led)
    sys.exit(0 if led["balanced"] else 3)
