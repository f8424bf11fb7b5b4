"""The batch mode of a run; the micro-batch mode is ``Incremental`` (run/incremental.py).

Both answer the same questions (``run/state.py``'s :class:`~.state.Mode`), so the stages
never ask which mode they are in: a batch run binds every file under the source path,
replaces its logical date's rows and has nothing of earlier runs to dedupe against.
"""

from __future__ import annotations

import os
from typing import TYPE_CHECKING, Any

from . import bind as bind_s
from .checks import Fact

if TYPE_CHECKING:
    from sqlglot import exp

    from ..contract.loader import LoadedContract
    from .state import Mode, RunContext, RunResult


#: source formats whose size is not a listing of files (read through their own catalog)
TABLE_OR_STREAM = ("delta", "iceberg", "kafka")


class Batch:
    """One run over every file under the source path, for its logical date."""

    routes_through_view = True
    ledger_tables: tuple[str, ...] = ()

    def bind(self, ctx: RunContext) -> tuple[bind_s.Binding, str]:
        binding = bind_s.bind(ctx.loaded)
        return binding, bind_s.run_id(ctx.loaded, binding)

    def input_size(self, loaded: LoadedContract) -> int | None:
        """The local source files' bytes, from a listing (the bind hashes them later);
        a missing path fails here, before an engine starts. None for a table, Kafka or
        object-store source."""
        spec = loaded.contract.source
        if spec.format in TABLE_OR_STREAM or bind_s.is_s3(spec.path):
            return None
        total = 0
        for f in bind_s.list_files(loaded, spec, "source"):
            try:
                total += os.path.getsize(f)
            except OSError:  # gone or unreadable: the bind reports it with its path
                continue
        return total

    def replace_run_id(self, ctx: RunContext) -> str | None:
        return None

    def against_prior(self, ctx: RunContext, ranked: exp.Select, typed: str) -> exp.Select:
        return ranked

    def facts(self, ctx: RunContext) -> list[Fact]:
        return []

    def record_files(self, ctx: RunContext) -> None:
        return None

    def empty_result(self, ctx: RunContext) -> RunResult | None:
        return None


def mode_of(incremental: Any, loaded: Any = None) -> Mode:
    """The mode a caller asked for: falsy → :class:`Batch`; ``True`` or an ``Incremental``
    → one micro-batch (run/incremental.py; over Kafka offsets for a Kafka source, which
    always runs as micro-batches: run/offsets.py)."""
    if loaded is not None and loaded.contract.source.format == "kafka":
        from .offsets import KafkaIncremental

        return incremental if isinstance(incremental, KafkaIncremental) else KafkaIncremental()
    if not incremental:
        return Batch()
    from .incremental import as_incremental

    return as_incremental(incremental)
