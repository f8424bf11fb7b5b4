"""How many records a run stage handled, for progress (the CLI shows count and rate).

Read from what the stage left on the run context, never counted again: bind counts the
raw records from the bytes, dedupe the parsed ones, route the routed ones, publish the
clean rows it wrote. Stages that do not handle records (compile, references, model,
check) report none.
"""

from __future__ import annotations

from typing import Any


def records_after(ctx: Any, stage: str) -> int | None:
    """Records ``stage`` handled, from the run context (``run/pipeline.RunContext``, not
    imported: this leaf must not join the pipeline's imports) it just filled; None when
    the stage does not count records."""
    if stage in ("bind", "read"):  # read parses every raw record bind counted
        return ctx.binding.raw_records if ctx.binding is not None else None
    key = {"dedupe": "parsed", "route": "routed", "publish": "clean_published"}.get(stage)
    value = getattr(ctx.counts, key) if key else None
    return value if isinstance(value, int) else None
