"""How much a DuckDB run may buffer before it spills, sized by the input it was bound to.

DuckDB's own default is 80 % of the machine's memory, so a run grew with its input
instead of spilling to ``<warehouse>.tmp``. sluicegate caps the buffer, and the cap is a
trade of memory for speed that depends on the input (benchmarks/RESULTS.md, 2026-12-04,
the retail feed): at 1M lines (230 MB of NDJSON) 800MB keeps the run under 1 GiB of RSS
and a larger buffer gains nothing; at 5M lines (1.15 GB) the run spends ~13 % of its
time spilling, which 1500MB avoids for ~1.6 GiB of RSS. So a contract that sets no
``engine.memory_limit`` starts at 800MB and is raised to 1500MB once the bind has seen
at least :data:`LARGE_INPUT_BYTES` of input — never to more than half the machine's
memory. A contract's own ``memory_limit`` is never changed.
"""

from __future__ import annotations

import os

#: the buffer of a run whose contract sets no ``engine.memory_limit``
DEFAULT_MEMORY_LIMIT = "800MB"
#: the buffer once the bound input reaches :data:`LARGE_INPUT_BYTES`
LARGE_INPUT_MEMORY_LIMIT = "1500MB"
LARGE_INPUT_LIMIT_BYTES = 1_500_000_000  # DuckDB reads MB as 10**6 bytes
#: between the 1M-line feed (230 MB: no gain from more) and the 5M one (1.15 GB: 13 %)
LARGE_INPUT_BYTES = 512 * 2**20


def buffer_for_input(input_bytes: int, physical_bytes: int | None = None) -> str:
    """The memory limit of a run over ``input_bytes`` of bound input on a machine with
    ``physical_bytes`` of memory (None: this machine's)."""
    if input_bytes < LARGE_INPUT_BYTES:
        return DEFAULT_MEMORY_LIMIT
    physical = physical_memory() if physical_bytes is None else physical_bytes
    if physical is None or physical // 2 < LARGE_INPUT_LIMIT_BYTES:
        return DEFAULT_MEMORY_LIMIT
    return LARGE_INPUT_MEMORY_LIMIT


def physical_memory() -> int | None:
    """This machine's memory in bytes (None where the platform does not say)."""
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, OSError, ValueError):
        return None
