"""The ledger's read-back: how many rows each output holds of a run, how many records each
file has across the outputs, and how many extra copies (a record in two outputs, or twice
in one) there are — from one scan of the outputs.

One question, three ways to ask it. Any engine can group every (file, line) pair; an
engine with bitmap aggregates (``EngineCapabilities.bitmap_aggregate``, DuckDB) sets one
bit per line in a bitmap per file, which answers all three without a hash table of a
million pairs. Those bitmaps are used only while they stay small
(:data:`BITMAP_BUDGET_BYTES`): every file's bitmap spans the run's whole line range, so
many files and one long file would multiply. An engine with bucketed bitmaps
(``EngineCapabilities.bucket_bitmaps``, Spark) keeps one bitmap per file and bucket of
32,768 lines, which needs no range to size first.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, NamedTuple

from ..compile import ledger as ledger_c

if TYPE_CHECKING:
    from ..engines import Engine

#: Largest total size of the per-file bitmaps; beyond it the pairs are grouped instead.
BITMAP_BUDGET_BYTES = 64 * 1024 * 1024


class Readback(NamedTuple):
    """What the outputs hold of one run, read back in one or two statements."""

    written: dict[str, int]
    """Rows of each table."""
    extra: int
    """Extra copies: a record in two outputs, or twice in one (0 when every record is once)."""
    files: dict[str, int]
    """Records per source file, across the tables."""


def output_readback(eng: Engine, tables: list[str], run_id: str) -> Readback:
    """``run_id``'s rows across ``tables``: per table, the extra copies, per file.

    One scan answers all three (a count per table would be one more scan each, and on
    Spark one more job each)."""
    if eng.capabilities.bitmap_aggregate:
        low, high, files = eng.fetch(ledger_c.lineage_range(tables, run_id))[0]
        # no line number at all (no row): the grouped query answers, cheaply
        if (
            low is not None
            and int(files) * ((int(high) - int(low)) // 8 + 1) <= BITMAP_BUDGET_BYTES
        ):
            rows = eng.fetch(ledger_c.lineage_bitmaps(tables, run_id, int(low), int(high)))
        else:
            rows = eng.fetch(ledger_c.lineage_summary(tables, run_id))
    elif eng.capabilities.bucket_bitmaps:
        rows = eng.fetch(ledger_c.lineage_bucket_bitmaps(tables, run_id))
    else:
        rows = eng.fetch(ledger_c.lineage_summary(tables, run_id))
    return Readback(
        written={t: sum(int(r[3 + i]) for r in rows) for i, t in enumerate(tables)},
        extra=sum(int(r[2]) for r in rows),
        files={r[0]: int(r[1]) for r in rows},
    )


def lineage_readback(eng: Engine, tables: list[str], run_id: str) -> tuple[int, dict[str, int]]:
    """``(extra copies, {file: records})`` of ``run_id``'s rows across ``tables``."""
    back = output_readback(eng, tables, run_id)
    return back.extra, back.files
