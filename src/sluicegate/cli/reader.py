"""Open a contract's warehouse for a report (``facts``): read-only, through the workspace."""

from __future__ import annotations

from typing import Any

from ..engines import Engine
from ..workspace import Access, Workspace, open_engine_for


def open_reader(
    loaded: Any, wait_seconds: float, engine_name: str | None = None
) -> tuple[Engine, str]:
    """The contract's engine (or ``--engine``'s) opened read-only (waiting
    ``wait_seconds`` for a publishing run), with the contract's ``engine:`` section
    applied — master and remote included — as for every command; and the warehouse path
    for messages."""
    workspace = Workspace(loaded)
    workspace.require("facts")
    engine = open_engine_for(loaded, Access.READ, engine=engine_name, wait_seconds=wait_seconds)
    return engine, str(workspace.warehouse)
