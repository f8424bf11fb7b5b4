"""Fault injection at stage boundaries — a testing hook, off unless an environment variable asks.

The crash-consistency tests kill a real run at every boundary and check the warehouse;
the concurrency tests pause a run at a chosen point and read the warehouse meanwhile.
Both need the *real* code path, so the hook lives in the runner, not in a mock:

* ``SLUICEGATE_FAULT=<point>`` — the process SIGKILLs itself on reaching ``<point>``
  (no ``finally`` blocks, no atexit: exactly what a crash or an OOM kill does).
* ``SLUICEGATE_FAULT=<point>:raise`` — raise an unexpected ``RuntimeError`` there instead
  (what a bug does: the CLI must answer exit 70, release the lock, print no traceback).
* ``SLUICEGATE_PAUSE=<point>[:seconds]`` — sleep there (default 5 s); with
  ``SLUICEGATE_PAUSE_FILE=<path>`` the file is created first, so a test knows it arrived.

Points are listed in :data:`POINTS` (``docs/publish-and-govern.md`` explains each).
"""

from __future__ import annotations

import os
import signal
import time
from pathlib import Path

FAULT_ENV = "SLUICEGATE_FAULT"
PAUSE_ENV = "SLUICEGATE_PAUSE"
PAUSE_FILE_ENV = "SLUICEGATE_PAUSE_FILE"

#: Every point a run passes, in order. ``publish:*`` points are inside the warehouse
#: transaction (``attached`` and ``committed`` just outside it).
POINTS = (
    "locked",
    "after_bind",
    "after_compile",
    "after_references",
    "after_read",
    "after_dedupe",
    "after_route",
    "after_model",
    "after_check",
    "publish:attached",
    "publish:begun",
    "publish:written",
    "publish:audited",
    "publish:facts",
    "publish:before_commit",
    "publish:committed",
    "after_publish",
    "metrics_written",
)


def checkpoint(point: str) -> None:
    """Crash or pause here if the environment asks for ``point``; otherwise nothing."""
    fault = os.environ.get(FAULT_ENV)
    if fault == point:
        os.kill(os.getpid(), signal.SIGKILL)
    if fault == f"{point}:raise":
        raise RuntimeError(f"fault injected at {point}")
    pause = os.environ.get(PAUSE_ENV)
    if pause:
        name, _, seconds = pause.rpartition(":")
        if not _is_number(seconds):  # point names contain ':' too (publish:begun)
            name, seconds = pause, ""
        if name == point:
            marker = os.environ.get(PAUSE_FILE_ENV)
            if marker:
                Path(marker).write_text(str(os.getpid()), encoding="utf-8")
            time.sleep(float(seconds or 5))


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
