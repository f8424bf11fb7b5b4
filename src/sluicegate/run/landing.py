"""Notice a landed file between two polls of ``watch``: look at the landing folder often.

A poll of the DuckDB watch (run/watch.py) is a whole incremental run: it loads the
contract, opens an engine, attaches the warehouse to read the processed-file ledger and
stats every processed file. Running one every few hundred milliseconds would hold the
warehouse's file lock most of the time and burn a core, so the default ``--interval`` is
seconds — and a landed file then waited half an interval on average before its batch
started (2.5 s at the default 5 s; the ``watch-latency`` benchmark row).

Between polls the watch now only *looks*: the source's listing (the same files a run
would bind, with their size and mtime) every :data:`LOOK_SECONDS`. When it differs from
the listing taken just before the last poll, and has held still for one look, the next
poll starts at once. Correctness still rests on the warehouse's file ledger only: a look
decides *when* to poll, never *what* a batch processes; a listing that cannot be taken
cheaply (an ``s3://`` source, an input error the run itself must report) is ``None`` and
the watch falls back to waiting the whole interval, as before.

"Held still for one look" is for writers that do not rename: a file still growing when it
is bound fails its batch's ledger (docs/streaming.md §9); waiting one look without change
makes catching a slow writer mid-file less likely, at the price of one look of latency.
A look every 0.05 s (it was 0.1 s) halves both the wait for the next look and the hold:
~0.075 s from the rename to the poll on average; a look of a small folder costs well
under a millisecond.
A look costs one walk of the landing folder; the wait between looks is at least ten
times what the last look took, so a huge folder costs at most ~10 % of a core.
"""

from __future__ import annotations

import os
import threading
import time
from typing import TYPE_CHECKING

from ..errors import SluiceError
from .bind_s3 import is_s3

if TYPE_CHECKING:
    from ..contract.loader import LoadedContract

#: Seconds between two looks at the landing folder (at least; see the module docstring).
LOOK_SECONDS = 0.05
#: A look may take at most this share of the time between looks.
LOOK_SHARE = 0.1

Listing = frozenset[tuple[str, int, int]]


def listing(loaded: LoadedContract) -> Listing | None:
    """``(path, size, mtime_ns)`` of every file a run would bind now; None when the source
    cannot be listed cheaply or without an error (the run reports errors, not a look)."""
    from . import bind as bind_s

    src = loaded.contract.source
    if src.format == "kafka" or not src.path or is_s3(src.path):
        return None
    try:
        files = bind_s.list_files(loaded, src, "source")
    except SluiceError:
        return None
    out = set()
    for path in files:
        try:
            st = os.stat(path)
        except OSError:  # deleted between the walk and the stat: it is not there
            continue
        out.add((path, st.st_size, st.st_mtime_ns))
    return frozenset(out)


def wait_for_landing(
    loaded: LoadedContract, stop: threading.Event, interval: float, polled: Listing | None
) -> bool:
    """Wait up to ``interval`` seconds (or until ``stop``); return True early once the
    listing differs from ``polled`` (taken before the last poll) and held still for one
    look. False when the whole interval passed, or ``stop`` was set."""
    deadline = time.monotonic() + interval
    previous: Listing | None = None
    while not stop.is_set():
        left = deadline - time.monotonic()
        if left <= 0:
            return False
        t = time.monotonic()
        now = listing(loaded) if polled is not None else None
        took = time.monotonic() - t
        if now is None:  # nothing cheap to look at: wait the interval out
            stop.wait(max(deadline - time.monotonic(), 0))
            return False
        if now != polled and now == previous:
            return True
        previous = now
        stop.wait(min(max(LOOK_SECONDS, took / LOOK_SHARE), max(deadline - time.monotonic(), 0)))
    return False


__all__ = ["LOOK_SECONDS", "Listing", "listing", "wait_for_landing"]
