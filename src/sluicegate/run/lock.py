"""One writer per contract: a lock file that names its holder and survives a crashed one.

Two runs of one contract at once would replace each other's rows for the same logical
date and race on the facts; so the second is refused (exit 5) with a message naming the
first. The lock is a small JSON file — pid, host, run id, start time, a random token —
next to the run metrics (``<warehouse>.runs/<contract>/writer.lock``).

Why not only ``flock`` on the lock file? A kernel lock dies with its process, which is
what we want, but it names nobody and is invisible to operators (and to a scheduler
looking at files). Why not only an ``O_EXCL`` file? It outlives a crashed holder, and two
processes that both find it stale can both "take it over". So both:

* The **lock file** is created atomically with its full content: written to a private
  temp file, then ``link()``-ed into place — ``link`` fails if the name exists
  (``O_EXCL`` semantics without a window in which the file exists but is empty).
* Every inspection and change of the lock file (create, stale takeover, run-id update,
  release) happens while holding a ``flock`` on a **guard file** for a few milliseconds.
  The kernel releases the guard when its holder dies, so the guard itself is never stale,
  and a takeover is a compare-and-replace: re-read under the guard, still the same dead
  holder → replace. Two processes cannot both take over one stale lock.
* A holder is **stale** when it ran on this host and its pid is gone, or the pid now
  belongs to a different process (its start time in ``/proc`` differs: pid reuse).
  A holder on another host is never presumed dead; the message says which file to delete.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import secrets
import socket
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

from ..errors import LockedError
from ..faults import checkpoint

try:  # POSIX; elsewhere the guard is skipped (documented: one host, POSIX, for takeover safety)
    import fcntl
except ImportError:  # pragma: no cover - Windows
    fcntl = None  # type: ignore[assignment]


@dataclass(frozen=True)
class Holder:
    """Who holds (or held) the lock."""

    pid: int
    host: str
    started: str
    token: str
    contract: str
    run_id: str | None = None
    proc_start: str | None = None

    def describe(self) -> str:
        run = f"run {self.run_id}" if self.run_id else "a run still binding its input"
        return f"pid {self.pid} on host {self.host} ({run}, started {self.started})"


def _proc_start(pid: int) -> str | None:
    """The process start time (clock ticks since boot) from /proc: tells pid reuse apart."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text(encoding="ascii", errors="replace")
    except OSError:
        return None
    # field 22; the command name (field 2) may contain spaces, so split after its ')'
    rest = stat.rsplit(")", 1)[-1].split()
    return rest[19] if len(rest) > 19 else None


def holder_alive(h: Holder) -> bool:
    """False only when we can prove the holder is gone (same host; pid dead or reused)."""
    if h.host != socket.gethostname():
        return True
    if h.pid <= 0:  # an unreadable lock file: nobody can be holding it
        return False
    try:
        os.kill(h.pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass  # exists, owned by someone else
    if h.proc_start is not None:
        now = _proc_start(h.pid)
        if now is not None and now != h.proc_start:
            return False
    return True


class WriterLock:
    """The writer lock of one contract. Use :meth:`hold` as a context manager."""

    def __init__(self, path: Path, contract: str) -> None:
        self.path = Path(path)
        self.contract = contract
        self.guard_path = self.path.with_name(self.path.name + ".guard")
        self.mine: Holder | None = None
        #: the stale holder this process took the lock over from, if any
        self.took_over: Holder | None = None

    # -- the guard: a kernel lock held for milliseconds around every change ---------------
    @contextlib.contextmanager
    def _guard(self) -> Iterator[None]:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if fcntl is None:  # pragma: no cover
            yield
            return
        fd = os.open(self.guard_path, os.O_CREAT | os.O_RDWR, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)  # closing releases the flock

    def read(self) -> Holder | None:
        """The current holder, or None when unlocked. An unreadable file counts as a holder
        that cannot be alive (pid 0): only a hand-edited or truncated file looks like that."""
        try:
            text = self.path.read_text(encoding="utf-8")
        except FileNotFoundError:
            return None
        try:
            return Holder(**json.loads(text))
        except (ValueError, TypeError):
            return Holder(0, socket.gethostname(), "?", "corrupt", self.contract)

    def _write_new(self, holder: Holder, *, replace: bool) -> None:
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.{holder.token}.tmp")
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump(asdict(holder), f, sort_keys=True)
            f.flush()
            os.fsync(f.fileno())
        try:
            if replace:
                os.replace(tmp, self.path)
            else:
                os.link(tmp, self.path)  # fails if the lock exists: create-if-absent
        finally:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(tmp)

    def _refuse(self, h: Holder) -> LockedError:
        return LockedError(
            f"contract '{self.contract}' is already being run by {h.describe()}",
            hint=f"wait for it to finish. The lock is {self.path}; a crashed holder on this "
            "host is detected and taken over by the next run"
            + ("" if h.host == socket.gethostname() else "; delete it only if that host is down"),
        )

    # -- public ----------------------------------------------------------------------------
    def acquire(self, run_id: str | None = None) -> Holder:
        """Take the lock or raise :class:`LockedError` naming the live holder."""
        me = Holder(
            pid=os.getpid(),
            host=socket.gethostname(),
            started=dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
            token=secrets.token_hex(8),
            contract=self.contract,
            run_id=run_id,
            proc_start=_proc_start(os.getpid()),
        )
        with self._guard():
            current = self.read()
            if current is not None:
                if holder_alive(current):
                    raise self._refuse(current)
                checkpoint("lock:stale")  # a testing hook: widen the takeover window
                # compare-and-replace under the guard: nobody else can act on it meanwhile
                os.unlink(self.path)
                self.took_over = current
            try:
                self._write_new(me, replace=False)
            except FileExistsError:  # only without a working guard (no fcntl, odd filesystems)
                raise self._refuse(self.read() or me) from None
        self.mine = me
        return me

    def update(self, **changes: str | None) -> None:
        """Record the run id once bound (only while the lock is still ours)."""
        if self.mine is None:
            return
        with self._guard():
            current = self.read()
            if current is None or current.token != self.mine.token:
                return
            fields = {**asdict(self.mine), **changes}
            self.mine = Holder(**fields)
            self._write_new(self.mine, replace=True)

    def release(self) -> None:
        """Remove the lock if it is still ours (never someone else's)."""
        if self.mine is None:
            return
        with self._guard():
            current = self.read()
            if current is not None and current.token == self.mine.token:
                os.unlink(self.path)
        self.mine = None

    @contextlib.contextmanager
    def hold(self, run_id: str | None = None) -> Iterator[WriterLock]:
        self.acquire(run_id)
        try:
            yield self
        except BaseException:
            # the run's own error wins: a release that fails too (a filesystem turned
            # read-only) must not hide it; a stale lock is taken over by the next run
            with contextlib.suppress(Exception):
                self.release()
            raise
        self.release()
