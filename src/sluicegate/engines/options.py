"""How a contract's ``engine:`` section becomes the keyword options of one engine.

Each engine takes the settings it understands (DuckDB: memory and threads, staging and
lock waits; Spark: master, remote, session options); this is the one place that knows
which, so the workspace opens every engine the same way and no layer above compares
engine names.
"""

from __future__ import annotations

from enum import Enum
from typing import Any

from ..contract.models import EngineSection
from ..contract.secret import reveal

# DuckDB's buffer limit when the contract sets no ``engine.memory_limit``, raised for a
# large bound input (engines/duckdb_memory.py says why and by how much)
from .duckdb_memory import DEFAULT_MEMORY_LIMIT

__all__ = ["DEFAULT_MEMORY_LIMIT", "Access", "contract_options"]


class Access(Enum):
    """What a command does with the warehouse."""

    RUN = "run"  # a run: heavy work in memory, the warehouse held only while publishing
    READ = "read"  # a report: read-only
    OPERATE = "operate"  # an operator command (dlq): short writes


def contract_options(
    name: str, cfg: EngineSection, access: Access, *, wait_seconds: float
) -> dict[str, Any]:
    """The options of engine ``name`` from the contract's ``engine:`` section."""
    if name == "duckdb":
        if access is Access.RUN:
            return {
                "memory_limit": cfg.memory_limit or DEFAULT_MEMORY_LIMIT,
                # no limit of the contract's own: the bind's input size may raise it
                "sized_by_input": cfg.memory_limit is None,
                "threads": cfg.threads,
                # heavy work in memory; the warehouse file is held only while publishing
                "staging": True,
                "wait_seconds": wait_seconds,
            }
        # a run holds the DuckDB file only while it publishes: wait for it rather than fail
        return {"read_only": access is Access.READ, "wait_seconds": wait_seconds}
    if name == "spark":  # precedence (CLI > environment > contract): spark_session.py
        return {
            "contract_master": cfg.master,
            "contract_remote": cfg.remote,
            # the driver boundary: a ${secret:…} option is revealed only here
            "options": {k: reveal(v) for k, v in cfg.options.items()} or None,
        }
    return {}
