"""Each DLQ row's lifecycle read from the Delta change data feed (``sluicegate dlq history``).

On a Delta warehouse the DLQ tables are created with the change data feed on (seed 004;
engines/delta_journal.py ``CDF``), so every commit that touched a row can be read back
with its version and timestamp — by delta-rs on the embedded engine, by Delta's
``readChangeFeed`` on Spark, or by any Delta reader. The feed is the lifecycle:

* an inbox ``insert`` is the row entering the DLQ (normally ``quarantined``);
* an inbox ``update_preimage``/``update_postimage`` pair is a status change (``fixed``,
  ``rejected``, ``recycled``, ``quarantined`` again after a failed recycle) or an edit;
  the event names the columns that changed;
* an inbox ``delete`` is the row leaving the inbox (its date replaced by a rerun);
* an outbox ``insert`` is the row recycled into the clean table (exactly once).

A warehouse without a change feed (the one-file DuckDB warehouse, Iceberg) has the same
facts, without commit versions, in the DLQ audit table (``dlq/audit.py``); ``history``
says so instead of guessing (docs/dlq.md § History).
"""

from __future__ import annotations

import datetime as dt
from typing import Any

from ..errors import UsageError
from .store import DlqStore

CDF_COLUMNS = ("_change_type", "_commit_version", "_commit_timestamp")
#: columns whose change alone is not an event worth naming (set on every write)
QUIET = frozenset({"_dlq_timestamp", *CDF_COLUMNS})


def history(store: DlqStore, sk: str | None = None) -> dict[str, Any]:
    """The lifecycle of every DLQ row (or of key ``sk``) from the inbox's and outbox's
    change data feeds: ``{"inbox", "outbox", "source", "rows": [{"_dlq_sk", "events"}]}``."""
    eng = store.engine
    t = store.tables
    if not eng.storage.change_feed:
        raise UsageError(
            f"outputs.format: {eng.storage.format} keeps no change data feed, so there is "
            "no commit-by-commit history of the DLQ",
            hint=f"each row's changes are in the audit table '{t.audit}': "
            "sluicegate dlq show CONTRACT KEY prints them (docs/dlq.md § History)",
        )
    inbox = eng.change_feed(t.inbox)
    outbox = eng.change_feed(t.outbox) if eng.table_exists(t.outbox) else []
    rows = lifecycles(inbox, outbox)
    if sk is not None:
        if sk not in rows:
            raise UsageError(
                f"no DLQ row with key {sk} in the change data feed of '{t.inbox}'",
                hint="list the keys with: sluicegate dlq list CONTRACT",
            )
        rows = {sk: rows[sk]}
    return {
        "source": "change_data_feed",
        "inbox": t.inbox,
        "outbox": t.outbox,
        "rows": [{"_dlq_sk": k, **v} for k, v in rows.items()],
    }


def lifecycles(inbox: list[dict[str, Any]], outbox: list[dict[str, Any]]) -> dict[str, Any]:
    """Events per ``_dlq_sk`` (in order of first appearance), each event
    ``{version, at, table, change, status, changed}``, ordered by commit time."""
    out: dict[str, Any] = {}
    pre: dict[tuple[str, int], dict[str, Any]] = {}
    for r in inbox:
        if r["_change_type"] == "update_preimage":
            pre[(r["_dlq_sk"], r["_commit_version"])] = r
    for r in inbox:
        kind = r["_change_type"]
        if kind == "update_preimage":
            continue
        entry = out.setdefault(r["_dlq_sk"], _entry(r))
        event = _event(r, "inbox", kind)
        if kind == "update_postimage":
            before = pre.get((r["_dlq_sk"], r["_commit_version"]), {})
            event["changed"] = sorted(
                c for c in r if c not in QUIET and before.get(c, r[c]) != r[c]
            )
            if not event["changed"]:
                continue  # a rewrite of the same values (e.g. a rerun's new timestamp)
        entry["events"].append(event)
    for r in outbox:
        if r["_change_type"] != "insert":
            continue
        entry = out.setdefault(r["_dlq_sk"], _entry(r))
        event = _event(r, "outbox", "insert")
        event["status"] = "recycled"
        event["run_id"] = r.get("_dlq_recycle_run_id")
        entry["events"].append(event)
    for entry in out.values():
        entry["events"].sort(key=lambda e: (e["at"], e["table"] != "inbox", e["version"]))
    return out


def _entry(r: dict[str, Any]) -> dict[str, Any]:
    return {"_source_file": r.get("_source_file"), "_source_line": r.get("_source_line"),
            "events": []}  # fmt: skip


def _event(r: dict[str, Any], table: str, kind: str) -> dict[str, Any]:
    return {
        "table": table,
        "version": int(r["_commit_version"]),
        "at": _iso(r["_commit_timestamp"]),
        "change": kind,
        "status": r.get("_dlq_status"),
    }


def _iso(t: Any) -> str:
    """Commit timestamps as UTC ISO text (delta-rs gives naive UTC, Spark may give aware)."""
    if isinstance(t, dt.datetime):
        if t.tzinfo is not None:
            t = t.astimezone(dt.UTC).replace(tzinfo=None)
        return t.isoformat(sep=" ", timespec="milliseconds")
    return str(t)
