"""What the ``sluicegate`` process does about Python's cyclic garbage collector.

A command builds its objects once — imported modules, the contract's models, SQL trees —
and exits; the collector's passes over that heap find little to free. Measured on a
5,000-line ``run`` (benchmarks/RESULTS.md, 2026-12-02): ~270 collections taking 0.25 CPU s
during the run, then 0.3–0.6 s of wall time after the last ``atexit`` handler, mostly the
interpreter's own full collections over that heap while it tears the modules down.

So the command line — never the library: ``sluicegate.run`` called from Python leaves its
host's settings alone — collects young objects less often, and freezes the heap when the
command is over, which makes the collections at exit skip it. Nothing is lost: sluicegate
closes its engines, files and temporary folders explicitly (``with``/``finally``), atexit
handlers still run, standard streams are still flushed, and memory goes back to the system
with the process.
"""

from __future__ import annotations

import gc

#: Allocations between two young-generation collections (Python's default is 700): one
#: run allocates a few hundred thousand short-lived SQL-tree nodes and pydantic objects.
YOUNG_THRESHOLD = 10_000


def collect_less() -> None:
    """At the start of a command: collect young objects every ``YOUNG_THRESHOLD``
    allocations, older generations as Python does."""
    _, older, oldest = gc.get_threshold()
    gc.set_threshold(YOUNG_THRESHOLD, older, oldest)


def freeze_for_exit() -> None:
    """When the command is over: move every object to the permanent generation, which the
    interpreter's collections at exit do not walk."""
    gc.freeze()
