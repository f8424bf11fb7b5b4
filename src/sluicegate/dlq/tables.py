"""Names and shapes of the DLQ tables: inbox (the quarantine table), outbox, audit.

The inbox is created by the first publish from the run's own projection (so it has the
declared columns' exact types); the outbox and the audit table have fixed shapes and are
created on first use, inside the transaction that first writes them.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlglot import exp

from ..compile.render import ident
from ..contract.models import Contract

STATUSES = ("quarantined", "fixed", "recycled", "rejected")
FINAL_STATUSES = ("recycled", "rejected")
EDITABLE_STATUSES = ("quarantined", "fixed")

#: Columns the DLQ adds to the quarantine projection, in order, with their types.
DLQ_COLUMNS: tuple[tuple[str, str], ...] = (
    ("_dlq_sk", "VARCHAR"),
    ("_dlq_source_table", "VARCHAR"),
    ("_dlq_status", "VARCHAR"),
    ("_dlq_attempts", "INTEGER"),
    ("_dlq_timestamp", "TIMESTAMP"),
    ("_dlq_failed_rules", None),  # same type as _failed_rules: list of {name, rule}
    ("_dlq_rescued_data", "VARCHAR"),
    ("_row_data", "VARCHAR"),
)

OUTBOX_COLUMNS: tuple[tuple[str, str], ...] = (
    ("_dlq_sk", "VARCHAR"),
    ("_dlq_source_table", "VARCHAR"),
    ("_row_data", "VARCHAR"),
    ("_dlq_recycled_at", "TIMESTAMP"),
    ("_dlq_recycle_run_id", "VARCHAR"),
)

AUDIT_COLUMNS: tuple[tuple[str, str], ...] = (
    ("_dlq_sk", "VARCHAR"),
    ("action", "VARCHAR"),  # fix | mark | recycle | requarantine | superseded | restore
    ("changed_by", "VARCHAR"),
    ("changed_at", "TIMESTAMP"),
    ("before_json", "VARCHAR"),  # the changed fields before, canonical JSON
    ("after_json", "VARCHAR"),  # … and after (NULL when the row left the inbox)
    ("run_id", "VARCHAR"),  # the run or recycle that made the change (NULL for operators)
)


@dataclass(frozen=True)
class DlqTables:
    """The table names of one contract's DLQ (seed 004: outbox = inbox + ``_outbox``)."""

    inbox: str
    outbox: str
    audit: str
    clean: str
    source_table: str

    @classmethod
    def of(cls, contract: Contract) -> DlqTables:
        o = contract.outputs
        return cls(o.quarantine, o.outbox, o.quarantine + "_audit", o.clean, contract.source_name)


def empty_select(columns: tuple[tuple[str, str], ...]) -> exp.Select:
    """A zero-row SELECT with typed columns: creates a table of that shape on any engine."""
    return (
        exp.select(
            *[exp.alias_(exp.cast(exp.null(), t), ident(n)) for n, t in columns if t is not None]
        )
        .where(exp.false())
        .limit(0)
    )
