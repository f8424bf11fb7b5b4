"""``sluicegate dlq`` — the operator's side of the dead-letter queue.

List and inspect quarantined rows, fix values (checked with the reader's cast rules),
mark rows fixed or rejected, recycle fixed rows through the contract, and see the run
ledger extended with the DLQ. Every change is audited (``--by``, default ``$USER``).
Every command accepts ``--json`` and then prints exactly one JSON document on stdout.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from functools import wraps
from typing import TYPE_CHECKING, Any

import click

from ..errors import UsageError
from .common import (
    CONTEXT,
    LEDGER_COLUMNS,
    contract_argument,
    engine_option,
    examples,
    handled,
    json_option,
    limit_option,
    logical_date_option,
    parse_vars,
    run_option,
    var_option,
)
from .console import CliConsole, printable
from .present import check_name, emit_json, shorten_middle, width

if TYPE_CHECKING:
    from ..contract.loader import LoadedContract

#: Keys are signed 64-bit numbers: ``-2059…`` must reach the command as an argument.
KEY_CONTEXT = {**CONTEXT, "ignore_unknown_options": True}

by_option = click.option(
    "--by", metavar="WHO", help="Who makes the change, for the audit table (default: $USER)."
)


status_filter = click.option(
    "--status",
    metavar="STATUS",
    help="Only rows with this status (quarantined, fixed, recycled, rejected).",
)
reason_filter = click.option("--reason", metavar="RULE", help="Only rows whose _reason is RULE.")
date_filter = click.option(
    "--date",
    "--logical-date",
    "logical_date",
    metavar="YYYY-MM-DD",
    help="Only rows of this logical date (also the value of ${logical_date}).",
)


def _warehouse_command(fn: Callable[..., None], *, filters: bool = False) -> Callable[..., None]:
    """The last options of every dlq command (--json, --var, --date, --engine) and its
    error handler; ``fn`` gets the loaded contract first, instead of --var and --date.
    With ``filters`` (list, summary) --date also narrows the rows to that date."""

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
        date_filter if filters else logical_date_option(),
        engine_option("Engine of the warehouse (default: the contract's, else duckdb)."),
    )
    command: Callable[..., None] = handled(load_first)
    for option in reversed(options):  # as if stacked in this order above the function
        command = option(command)
    return command


def _filtering_command(fn: Callable[..., None]) -> Callable[..., None]:
    return _warehouse_command(fn, filters=True)


def _emit(loaded: Any, doc: Any) -> None:
    emit_json(doc, loaded.redactor)


def _actor(by: str | None) -> str:
    from ..dlq.store import default_actor

    return by or default_actor()


def _show(v: Any) -> str:
    """A value for the terminal: control characters in data are shown escaped."""
    return "NULL" if v is None else printable(str(v))


@click.group(context_settings=CONTEXT)
def dlq() -> None:
    """The dead-letter queue: list, summary, show, fix, mark, recycle, ledger, history.

    \b
    Examples — a typical session (docs/dlq.md walks through it):
      sluicegate dlq summary contract.yml
      sluicegate dlq list contract.yml --status quarantined --date 2024-01-31
      sluicegate dlq show contract.yml KEY
      sluicegate dlq fix contract.yml KEY --set amt=5
      sluicegate dlq fix c.yml --where "_reason = 'unknown_customer'" --set cid=10
      sluicegate dlq mark contract.yml KEY --status rejected
      sluicegate dlq recycle contract.yml
      sluicegate dlq ledger contract.yml

    Statuses: quarantined → fixed → recycled, or back to quarantined when a fixed row
    still fails (attempts + 1); rejected is final and counted in the ledger.
    """


#: Rows ``dlq list`` prints unless --limit says otherwise (0 = all).
LIST_LIMIT = 20


def known_reasons(store: Any) -> list[str]:
    """Every reason a row can carry: the contract's rules, the built-ins, and any reason
    already in the inbox (a rule since removed)."""
    from ..dlq.browse import distinct
    from ..run.facts import BUILTINS

    names = {r.name for r in store.contract.rules} | set(BUILTINS)
    return sorted(names | set(distinct(store, "_reason")))


def source_root(store: Any) -> str:
    """The folder the contract's source path names: listings show paths below it."""
    from ..run.bind import source_root as root_of

    return root_of(store.loaded, store.contract.source)


def _filters(
    store: Any, date: str | None, run_id: str | None, reason: str | None, status: str | None
) -> Any:
    """The list/summary filters, each checked against what exists (a typo → exit 2 with
    the closest value, never an empty page)."""
    from ..dlq.browse import Filters, distinct
    from ..dlq.tables import STATUSES

    check_name("--status", status, STATUSES, what="DLQ status")
    check_name("--reason", reason, known_reasons(store), what="reason")
    if run_id is not None:
        check_name("--run", run_id, distinct(store, "_run_id"), what="run with DLQ rows")
    if date is not None:
        check_name("--date", date, distinct(store, "_logical_date"), what="date with DLQ rows")
    return Filters(date=date, run_id=run_id, reason=reason, status=status)


@dlq.command("list", context_settings=CONTEXT)
@contract_argument
@status_filter
@reason_filter
@run_option()
@limit_option(LIST_LIMIT, "At most N rows; the rest are counted as 'N more'.")
@_filtering_command
@examples(
    "sluicegate dlq list contract.yml",
    "sluicegate dlq list contract.yml --date 2024-01-31 --reason unknown_customer",
    "sluicegate dlq list contract.yml --limit 0 --json",
    "sluicegate dlq list contract.yml --status fixed --json",
)
def list_cmd(
    loaded: LoadedContract,
    contract: str,
    status: str | None,
    reason: str | None,
    run_id: str | None,
    limit: int,
    as_json: bool,
    engine: str | None,
) -> None:
    """List inbox rows (oldest lineage first): date, run, key, status, reason, where
    from (the source file below the source path, with its line) and the row's values."""
    from ..dlq.browse import page, where_from
    from ..dlq.store import open_store

    date = loaded.logical_date if _date_given() else None
    with open_store(loaded, read_only=True, engine_name=engine) as store:
        filters = _filters(store, date, run_id, reason, status)
        rows, total = page(store, filters, limit or None)
        counts = store.by_status()
        data_cols = store.data_columns()
        inbox = store.tables.inbox
        root = source_root(store)
    more = total - len(rows)
    if as_json:
        _emit(
            loaded,
            {
                "contract": loaded.contract.name,
                "inbox": inbox,
                "filters": {**filters.as_dict(), "limit": limit or None},
                "by_status": counts,
                "total": total,
                "count": len(rows),
                "more": more,
                "rows": [{**r, "_source": where_from(r, root)} for r in rows],
            },
        )
        return
    con = CliConsole()
    narrowed = ", ".join(f"{k} {v}" for k, v in filters.as_dict().items() if v is not None)
    con.line(
        f"{inbox}: {total} row(s)"
        + (f" with {narrowed}" if narrowed else "")
        + " ("
        + ", ".join(f"{s} {n}" for s, n in counts.items())
        + ")",
        "bold",
    )
    _listing(con, loaded, rows, data_cols, root)
    if more:
        con.line(f"… {more} more (--limit 0 lists all, --json for scripts)")


def _listing(
    con: CliConsole, loaded: Any, rows: list[dict[str, Any]], data_cols: list[str], root: str
) -> None:
    """Rows under a heading per logical date and run, two lines each — the key, status,
    reason and source line, then the values, wrapped — so a listing fits 80 columns and a
    key is never folded (an operator copies it into ``dlq show`` / ``dlq fix``)."""
    import textwrap

    from ..dlq.browse import where_from

    cols = width()
    reason_w = max((len(str(r["_reason"])) for r in rows), default=0)
    group = None
    for r in rows:
        here = (_show(r.get("_logical_date")), _show(r.get("_run_id")))
        if here != group:
            group = here
            n = sum(
                1 for x in rows if (_show(x.get("_logical_date")), _show(x.get("_run_id"))) == here
            )
            con.line("")
            con.line(f"{here[0]}  run {here[1]}  ({n} row(s) below)", "cyan")
        status = r["_dlq_status"] + (f" ×{r['_dlq_attempts']}" if r["_dlq_attempts"] > 1 else "")
        head = f"  {r['_dlq_sk']:>20}  {status:<13}  {str(r['_reason']):<{reason_w}}  "
        con.line(head + shorten_middle(where_from(r, root), max(cols - len(head), 12)))
        values = loaded.redactor(" ".join(f"{c}={_show(r.get(c))}" for c in data_cols))
        for piece in textwrap.wrap(values, max(cols - 6, 20), break_on_hyphens=False):
            con.line(" " * 6 + piece, "dim")


def _date_given() -> bool:
    """Was --date given on this command line (not a default)? Only then it filters."""
    ctx = click.get_current_context()
    return ctx.get_parameter_source("logical_date") == click.core.ParameterSource.COMMANDLINE


@dlq.command(context_settings=CONTEXT)
@contract_argument
@status_filter
@reason_filter
@run_option()
@_filtering_command
@examples(
    "sluicegate dlq summary contract.yml",
    "sluicegate dlq summary contract.yml --status quarantined --json",
)
def summary(
    loaded: LoadedContract,
    contract: str,
    status: str | None,
    reason: str | None,
    run_id: str | None,
    as_json: bool,
    engine: str | None,
) -> None:
    """Count inbox rows by logical date × reason × status (newest date first)."""
    from ..dlq.browse import summary as summarise
    from ..dlq.store import open_store

    date = loaded.logical_date if _date_given() else None
    with open_store(loaded, read_only=True, engine_name=engine) as store:
        filters = _filters(store, date, run_id, reason, status)
        groups = summarise(store, filters)
        inbox = store.tables.inbox
    total = sum(g["rows"] for g in groups)
    if as_json:
        _emit(
            loaded,
            {
                "contract": loaded.contract.name,
                "inbox": inbox,
                "filters": filters.as_dict(),
                "total": total,
                "groups": groups,
            },
        )
        return
    CliConsole().table(
        f"{inbox}: {total} row(s) by date, reason and status",
        ["date", "reason", "status", "rows"],
        [[g["logical_date"], g["reason"], g["status"], g["rows"]] for g in groups],
    )


@dlq.command(context_settings=KEY_CONTEXT)
@contract_argument
@click.argument("sk")
@_warehouse_command
@examples(
    "sluicegate dlq show contract.yml 7215893321", "sluicegate dlq show contract.yml -2059412305"
)
def show(loaded: LoadedContract, contract: str, sk: str, as_json: bool, engine: str | None) -> None:
    """Print one inbox row in full, with its audit history, as JSON (always: a row's
    values, failed rules and rescued data read best as JSON; --json is accepted)."""
    from ..dlq.audit import audit_history
    from ..dlq.store import open_store

    with open_store(loaded, read_only=True, engine_name=engine) as store:
        row = store.row(sk)
        audit = (
            store.engine.fetch_dicts(audit_history(store.tables, sk))
            if store.engine.table_exists(store.tables.audit)
            else []
        )
    _emit(loaded, {"row": row, "audit": audit})


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
@examples(
    "sluicegate dlq fix contract.yml 7215893321 --set amt=5 --by alice",
    "sluicegate dlq fix c.yml --where \"_reason = 'unknown_customer'\" --set cid=10",
)
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
@click.option("--status", required=True, metavar="fixed|rejected", help="The new status.")
@click.option(
    "--where", metavar="PREDICATE", help="Mark every editable row matching this predicate."
)
@by_option
@_warehouse_command
@examples(
    "sluicegate dlq mark contract.yml 7215893321 --status rejected",
    'sluicegate dlq mark contract.yml --where "amt = 0" --status fixed --json',
)
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

    check_name("--status", status, ("fixed", "rejected"), what="status a row can be marked")
    with open_store(loaded, engine_name=engine) as store:
        result = mark_rows(store, keys=list(keys), where=where, status=status, by=_actor(by))
    _report_action(loaded, result, as_json, contract)


def _ledger_table(con: CliConsole, led: dict[str, Any]) -> None:
    rows = [
        [
            r["run_id"][:12],
            r["logical_date"],
            *["—" if r[c] is None else r[c] for c in LEDGER_COLUMNS],
            r.get("balanced", "?"),
        ]
        for r in led["runs"]
    ]
    tot = led["totals"]
    rows.append(
        ["total", "", *["—" if tot[c] is None else tot[c] for c in LEDGER_COLUMNS], led["balanced"]]
    )
    con.table(
        f"DLQ ledger: {led['equation']}",
        ["run", "date", *LEDGER_COLUMNS, "balanced"],
        rows,
        numeric=set(LEDGER_COLUMNS),
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
@examples(
    "sluicegate dlq recycle contract.yml --by alice", "sluicegate dlq recycle contract.yml --json"
)
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
@examples("sluicegate dlq ledger contract.yml", "sluicegate dlq ledger contract.yml --json")
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
