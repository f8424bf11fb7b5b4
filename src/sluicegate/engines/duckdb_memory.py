"""How much a DuckDB run may buffer before it spills, sized by the input it was bound to.

DuckDB's own default is 80 % of the machine's memory, so a run grew with its input
instead of spilling to ``<warehouse>.tmp``. sluicegate caps the buffer, and the cap is a
trade of memory for speed that depends on the input (benchmarks/RESULTS.md, 2026-12-04,
the retail feed): at 1M lines (230 MB of NDJSON) 800MB keeps the run under 1 GiB of RSS
and a larger buffer gains nothing; at 5M lines (1.15 GB) the run spends ~13 % of its
time spilling, which 1500MB avoids for ~1.6 GiB of RSS. So a contract that sets no
``engine.memory_limit`` starts at 800MB and is raised to 1500MB once the bind has seen
at least :data:`LARGE_INPUT_BYTES` of input — never to more than half the machine's
memory (or a container's limit). A contract's own ``memory_limit`` is never changed.
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


def buffer_for_input(input_bytes: int, memory_bytes: int | None = None) -> str:
    """The memory limit of a run over ``input_bytes`` of bound input with ``memory_bytes``
    of memory to run in (None: what :func:`memory_available` finds)."""
    if input_bytes < LARGE_INPUT_BYTES:
        return DEFAULT_MEMORY_LIMIT
    memory = memory_available() if memory_bytes is None else memory_bytes
    if memory is None or memory // 2 < LARGE_INPUT_LIMIT_BYTES:
        return DEFAULT_MEMORY_LIMIT
    return LARGE_INPUT_MEMORY_LIMIT


#: a container's memory limit: cgroup v2, then v1 (v1 says "no limit" with a huge number)
CGROUP_LIMIT_FILES = (
    "/sys/fs/cgroup/memory.max",
    "/sys/fs/cgroup/memory/memory.limit_in_bytes",
)


def memory_available(cgroup_files: tuple[str, ...] = CGROUP_LIMIT_FILES) -> int | None:
    """The memory this process may use, in bytes: the machine's, or a container's limit
    when it is smaller (a pod of 2 GiB on a large host must not be given 1500MB).
    None where the platform says neither."""
    sizes = [n for n in (_physical_memory(), *map(_cgroup_limit, cgroup_files)) if n]
    return min(sizes) if sizes else None


def _physical_memory() -> int | None:
    try:
        return os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    except (AttributeError, OSError, ValueError):
        return None


def _cgroup_limit(path: str) -> int | None:
    """The limit in a cgroup file; None when the file is absent, says ``max`` or is not a
    number."""
    try:
        with open(path, encoding="ascii") as f:
            text = f.read().strip()
    except (OSError, UnicodeDecodeError):
        return None
    return int(text) if text.isdigit() else None
