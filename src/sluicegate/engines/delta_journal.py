"""What both engines' Delta stores share: the warehouse layout, the journal entry, the
commit marker, the date predicate, and how a dead transaction is recognised.

The journal format is the same for Spark (``delta_spark.py``) and DuckDB
(``delta_rs.py``), so either engine can complete the other's interrupted publish from
the staged Delta tables it names.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass, field

from sqlglot import exp

from ..compile.render import col, lit

INTERNAL = ".sluicegate"
PARTITION = "_logical_date"
KEY = "_dlq_sk"
MARKER = "sluicegate-tx:"
#: The prefix of sluicegate's own record tables in a warehouse (the run record, the file
#: ledger, the snapshots, the owners): a publish writes them after the outputs they name.
RECORDS = "_sluicegate_"
#: Table properties of the DLQ tables (the ones keyed by ``_dlq_sk``): the change data
#: feed, which ``sluicegate dlq history`` reads (seed 004). Row tracking, which seed 004
#: also asks for, is not set: delta-rs 1.6.6 cannot write tables with that feature, and
#: the warehouse is shared by both engines.
CDF = {"delta.enableChangeDataFeed": "true"}

ACTIVE: set[str] = set()
"""Transactions of this process still open (their staging is not an orphan)."""


@dataclass
class Entry:
    """One table a transaction publishes, as the journal records it.

    ``how``: ``replace`` (created or replaced whole), ``dates`` (replaceWhere of
    ``dates``), ``key`` (MERGE on ``_dlq_sk``), ``whole`` (overwrite), ``drop``.
    ``shadow`` is the staged Delta table the publish reads. ``keys``: for ``key``, when
    the store writes only a keyed table's changes (``writes_key_changes``), the
    published keys whose rows changed or went; the rows given are then only those of the
    keys whose rows differ (None: the rows are the whole table).
    """

    name: str
    shadow: str
    before: int | None
    how: str
    dirty: bool = False
    columns: tuple[str, ...] = ()
    dates: list | None = field(default=None)
    keys: list | None = field(default=None)


def new_tx_id() -> str:
    import secrets

    return f"{socket.gethostname()}~{os.getpid()}~{secrets.token_hex(6)}"


def in_dates(dates: list) -> exp.Expression:
    """``_logical_date IN (DATE …) [OR _logical_date IS NULL]``."""
    values = [d for d in dates if d is not None]
    parts: list[exp.Expression] = []
    if values:
        parts.append(
            exp.In(
                this=col(PARTITION),
                expressions=[exp.cast(lit(str(d)), "DATE") for d in sorted(values, key=str)],
            )
        )
    if len(values) < len(dates):
        parts.append(exp.Is(this=col(PARTITION), expression=exp.null()))
    return exp.or_(*parts) if len(parts) > 1 else parts[0]


def orphan(tx: str) -> bool:
    """A staging folder whose transaction can no longer commit (its process is gone)."""
    host, _, rest = tx.partition("~")
    pid_text = rest.partition("~")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False  # another host's transaction: never presumed dead
    pid = int(pid_text)
    if pid == os.getpid():
        return tx not in ACTIVE
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False
