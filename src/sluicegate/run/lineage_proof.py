"""The ledger's lineage read-back: how many records each file has across the outputs, and
how many extra copies (a record in two outputs, or twice in one) there are.

One question, two ways to ask it. Any engine can group every (file, line) pair; an engine
with bitmap aggregates (``EngineCapabilities.bitmap_aggregate``) sets one bit per line in
a bitmap per file, which answers both halves in one scan and without a hash table of a
million pairs. The bitmaps are used only while they stay small
(:data:`BITMAP_BUDGET_BYTES`): every file's bitmap spans the run's whole line range, so
many files and one long file would multiply.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..compile import ledger as ledger_c

if TYPE_CHECKING:
    from ..engines import Engine

#: Largest total size of the per-file bitmaps; beyond it the pairs are grouped instead.
BITMAP_BUDGET_BYTES = 64 * 1024 * 1024


def lineage_readback(eng: Engine, tables: list[str], run_id: str) -> tuple[int, dict[str, int]]:
    """``(extra copies, {file: records})`` of ``run_id``'s rows across ``tables``."""
    if eng.capabilities.bitmap_aggregate:
        low, high, files = eng.fetch(ledger_c.lineage_range(tables, run_id))[0]
        # no line number at all (no row): the grouped queries answer, cheaply
        if (
            low is not None
            and int(files) * ((int(high) - int(low)) // 8 + 1) <= BITMAP_BUDGET_BYTES
        ):
            rows = eng.fetch(ledger_c.lineage_bitmaps(tables, run_id, int(low), int(high)))
            return sum(int(extra) for _f, _n, extra in rows), {f: int(n) for f, n, _e in rows}
    extra = int(eng.fetch(ledger_c.lineage_overlaps(tables, run_id))[0][0])
    return extra, {f: int(n) for f, n in eng.fetch(ledger_c.lineage_files(tables, run_id))}
