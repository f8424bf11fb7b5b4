"""sluicegate: a data-quality gate that routes every record to exactly one place and proves it.

The public API (docs/python-api.md) is what this package exports; the CLI is a thin layer
over it::

    import sluicegate

    result = sluicegate.run("contract.yml", vars={"root": "/feeds"}, logical_date="2024-01-31")
    if result.exit_code:                       # 1 gate failed, 3 ledger violation
        print(result.status, result.ledger.quarantined_by_reason)
    sluicegate.report("contract.yml", out="quality.html")

The implementation is in :mod:`sluicegate.api`, imported on first use (PEP 562) so that
``import sluicegate`` and the CLI's start stay cheap (the API pulls in pydantic and
sqlglot, ~1 s).
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

# The subpackages sluicegate.run (the pipeline) and sluicegate.report (HTML report,
# progress events) are loaded first (both __init__ files are empty), so that the
# functions below own the names ``sluicegate.run`` and ``sluicegate.report``: a later
# ``import sluicegate.run.pipeline`` finds the package in sys.modules and leaves them be.
from . import report as _report_package
from . import run as _run_package
from ._version import __version__

if TYPE_CHECKING:
    from .api import Ledger, LoadedContract, RunOutcome, dlq_counts, dlq_rows, facts, load
    from .errors import ContractError, SluiceError
    from .report.events import Listener

del _report_package, _run_package

__all__ = [
    "ContractError",
    "Ledger",
    "LoadedContract",
    "RunOutcome",
    "SluiceError",
    "__version__",
    "dlq_counts",
    "dlq_rows",
    "facts",
    "load",
    "report",
    "run",
]

_LAZY = {
    "Ledger": "api",
    "LoadedContract": "api",
    "RunOutcome": "api",
    "dlq_counts": "api",
    "dlq_rows": "api",
    "facts": "api",
    "load": "api",
    "ContractError": "errors",
    "SluiceError": "errors",
}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module 'sluicegate' has no attribute '{name}'")


def run(
    contract: str | os.PathLike[str] | LoadedContract,
    *,
    vars: Mapping[str, Any] | None = None,
    logical_date: str | None = None,
    engine: Literal["duckdb", "spark"] | None = None,
    engine_options: Mapping[str, Any] | None = None,
    listener: Listener | None = None,
    notify: bool = True,
) -> RunOutcome:
    """Run a contract once; see :func:`sluicegate.api.run`."""
    from .api import run as _run

    return _run(
        contract,
        vars=vars,
        logical_date=logical_date,
        engine=engine,
        engine_options=engine_options,
        listener=listener,
        notify=notify,
    )


def report(
    contract: str | os.PathLike[str] | LoadedContract,
    *,
    out: str | os.PathLike[str] | None = None,
    runs: int = 90,
    run_id: str | None = None,
    vars: Mapping[str, Any] | None = None,
) -> Path:
    """Write the contract's HTML report and return its path; see :func:`sluicegate.api.report`."""
    from .api import report as _report

    return _report(contract, out=out, runs=runs, run_id=run_id, vars=vars)
