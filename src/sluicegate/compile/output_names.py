"""Output table names a contract may not use: sluicegate's own tables, and names that
collide with the tables derived from another output (``<quarantine>_outbox``, ``_audit``).

``clean: _sluicegate_runs`` or ``clean: q_outbox`` beside ``quarantine: q`` passed
validation and crashed ``dlq recycle``; now they are located contract errors.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

RESERVED_PREFIXES = ("_sluicegate", "_sg_")


def check_output_names(contract: Any, add: Callable[..., None]) -> None:
    """Report reserved and colliding output names through ``add(key, message)``."""
    o = contract.outputs
    named = {
        "clean": o.clean,
        "quarantine": o.quarantine,
        "duplicates": o.duplicates,
        "facts": o.facts,
    }
    derived = {o.outbox: "the quarantine's outbox", o.quarantine + "_audit": "its audit"}
    for key, name in named.items():
        if name.lower().startswith(RESERVED_PREFIXES):
            add(("outputs", key), f"'{name}' is a name sluicegate reserves for its own tables")
        elif name.lower() in {d.lower() for d in derived}:
            what = next(v for d, v in derived.items() if d.lower() == name.lower())
            add(("outputs", key), f"'{name}' is {what} table; choose another name")
