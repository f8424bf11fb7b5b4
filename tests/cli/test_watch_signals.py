"""A stop signal can never deadlock the watcher (cli/watch_cmd.py, ``stop_on_signals``).

A Python signal handler runs in the main thread between two bytecodes — possibly while
that very thread holds the stop event's lock inside ``Event.wait`` (the watcher waits on
it every tenth of a second between polls). A handler that called ``stop.set()`` itself
then blocked forever on that lock: once in a CI run a watcher got SIGTERM and never
exited. Here the signal arrives exactly there, in a process of its own, and the event
must still be set and the process end.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap

from tests.conftest import REPO

SCRIPT = textwrap.dedent(
    """\
    import os, signal, threading
    from sluicegate.cli.watch_cmd import stop_on_signals

    stop = threading.Event()
    with stop_on_signals(stop):
        with stop._cond:  # what Event.wait holds between two of its bytecodes
            os.kill(os.getpid(), signal.SIGTERM)  # the handler runs here, on this thread
            for _ in range(3):  # a few bytecodes: the handler has surely run
                pass
        print("set" if stop.wait(10) else "not set", flush=True)
    """
)


def test_a_signal_while_the_main_thread_holds_the_events_lock_still_stops():
    try:
        done = subprocess.run(
            [sys.executable, "-c", SCRIPT],
            capture_output=True,
            text=True,
            timeout=30,
            cwd=REPO,
            check=False,
        )
    except subprocess.TimeoutExpired:
        raise AssertionError("the signal handler deadlocked on the stop event") from None
    assert done.stdout.strip() == "set", done.stderr
    assert "SIGTERM: finishing the current batch, then stopping" in done.stderr
