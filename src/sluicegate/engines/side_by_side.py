"""Run a few independent calls at once, on threads, and wait for all of them.

A Spark transaction stages and publishes each of its tables with a handful of small Delta
operations (log reads, one-task jobs, commits), each a chain of short steps with gaps
between them; one session runs jobs of several threads at once, so tables done side by
side fill each other's gaps (engines/delta_spark.py). The steps themselves are mostly CPU
on the driver, so on two cores the gain is the gaps, not a multiple: seven clones cost
~24 CPU s in ~12 s wall. Threads, not processes: the calls share the session.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import TypeVar

#: Threads at most: a few at once overlap the waits; many more than the driver's cores
#: would only queue.
THREADS = max(2, min(4, os.cpu_count() or 2))

_T = TypeVar("_T")


def side_by_side(calls: Sequence[Callable[[], _T]]) -> list[_T]:
    """Run ``calls`` on up to :data:`THREADS` threads; their results in order. Every call
    finishes before the first error is raised, so nothing is left running behind a
    failed commit. One call (or none) runs on the caller's thread.

    >>> side_by_side([lambda: 1, lambda: 2, lambda: 3])
    [1, 2, 3]
    """
    if len(calls) <= 1:
        return [c() for c in calls]
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=min(THREADS, len(calls))) as pool:
        futures = [pool.submit(c) for c in calls]
    return [f.result() for f in futures]
