"""The Spark engine's warehouse: Parquet tables in a directory, published by journaled swaps.

Layout (``docs/spark.md`` explains the guarantees)::

    <warehouse>/<table>/_sluicegate_table.json     schema and column order
    <warehouse>/<table>/_logical_date=2024-01-01/  one folder per logical date (when the
                                                   table has that column), else part files
    <warehouse>/.sluicegate/tx/<host>~<pid>~<id>/  a transaction's staged writes
    <warehouse>/.sluicegate/journal/<tx>.json      the swap list of a committing transaction
    <warehouse>/.sluicegate/lock                   flock held while swapping or recovering

Plain Parquet has no transaction log, so a commit is made of directory renames — each one
atomic on a POSIX file system — recorded first in a journal:

1. every change is already written under the transaction's folder (staging);
2. the journal (the list of renames) is written to a temporary file, fsynced and renamed
   into ``journal/``: **this is the commit point**;
3. each old partition (or table) folder is renamed into the transaction's ``backup/``, and
   the staged one renamed into its place;
4. the journal is deleted, then the transaction folder.

A crash before step 2 leaves the published tables untouched; the next open removes the
abandoned staging folder (its process is gone). A crash after step 2 leaves a journal;
the next open replays it — every rename is idempotent given which of old, staged and
backup exist — so the commit completes. Readers that list a table *during* step 3 may
see some partitions old and some new: the swap is atomic per partition folder, not
across folders or tables.

Pure standard library: no pyspark here, so the journal logic is tested on its own.
"""

from __future__ import annotations

import contextlib
import datetime as dt
import json
import os
import secrets
import shutil
import socket
from collections.abc import Iterator
from dataclasses import asdict, dataclass
from pathlib import Path

INTERNAL = ".sluicegate"
META = "_sluicegate_table.json"
PARTITION = "_logical_date"
NULL_PARTITION = "__HIVE_DEFAULT_PARTITION__"

try:  # POSIX
    import fcntl
except ImportError:  # pragma: no cover - Windows: one writer per warehouse is on the user
    fcntl = None  # type: ignore[assignment]

_ACTIVE: set[str] = set()
"""Transaction folders of this process that are still open (not orphans)."""


def partition_name(value: object) -> str:
    """The folder Spark writes for a ``_logical_date`` value (a date, or NULL)."""
    return f"{PARTITION}={NULL_PARTITION if value is None else str(value)}"


@dataclass(frozen=True)
class SwapOp:
    """One rename of a commit: ``staged`` (relative to the tx folder) replaces the target.

    ``part`` names a partition folder of ``table``; None means the whole table folder.
    ``staged`` None removes the target (a dropped table or an emptied partition).
    """

    table: str
    part: str | None
    staged: str | None


class Warehouse:
    """A directory of Parquet tables with crash-safe publishing."""

    def __init__(self, root: str | os.PathLike[str]) -> None:
        self.root = Path(os.path.abspath(root))
        if self.root.exists() and not self.root.is_dir():
            from ..errors import SluiceError

            raise SluiceError(
                f"the Spark warehouse {self.root} is a file; it must be a directory",
                hint="point outputs.warehouse at a folder (e.g. ./warehouse) for --engine spark",
            )
        self.internal = self.root / INTERNAL
        (self.internal / "tx").mkdir(parents=True, exist_ok=True)
        (self.internal / "journal").mkdir(parents=True, exist_ok=True)

    # -- tables ---------------------------------------------------------------------------
    def table_path(self, name: str) -> Path:
        return self.root / name

    def tables(self) -> list[str]:
        """Published tables (folders with a table description), sorted."""
        return sorted(
            p.name
            for p in self.root.iterdir()
            if p.is_dir() and p.name != INTERNAL and (p / META).is_file()
        )

    def read_meta(self, name: str) -> dict | None:
        path = self.table_path(name) / META
        if not path.is_file():
            return None
        return json.loads(path.read_text(encoding="utf-8"))

    @staticmethod
    def write_meta(folder: Path, schema_json: str, columns: list[str]) -> None:
        folder.mkdir(parents=True, exist_ok=True)
        _write_durably(
            folder / META,
            json.dumps({"schema": json.loads(schema_json), "columns": columns}, indent=1),
        )

    # -- transactions ---------------------------------------------------------------------
    def new_tx(self) -> Path:
        name = f"{socket.gethostname()}~{os.getpid()}~{secrets.token_hex(6)}"
        path = self.internal / "tx" / name
        path.mkdir(parents=True)
        _ACTIVE.add(str(path))
        return path

    def discard(self, tx: Path) -> None:
        """Roll back: the staged writes go; the published tables were never touched."""
        _ACTIVE.discard(str(tx))
        shutil.rmtree(tx, ignore_errors=True)

    def publish(self, tx: Path, ops: list[SwapOp], *, fault=None) -> None:  # noqa: ANN001
        """Journal ``ops`` (the commit point), apply them, and clean up."""
        for op in ops:
            if op.staged is not None and not (tx / op.staged).exists():
                raise FileNotFoundError(f"staged data missing before commit: {tx / op.staged}")
        journal = self.internal / "journal" / f"{tx.name}.json"
        with self._locked():
            doc = {
                "tx": tx.name,
                "written_at": dt.datetime.now(dt.UTC).isoformat(timespec="seconds"),
                "ops": [asdict(op) for op in ops],
            }
            _write_durably(journal, json.dumps(doc, indent=1))
            if fault:
                fault("spark:journaled")
            for i, op in enumerate(ops):
                self._apply(tx, op)
                if fault and i == 0:
                    fault("spark:swapping")
            _fsync_dir(self.root)
            journal.unlink()
        _ACTIVE.discard(str(tx))
        shutil.rmtree(tx, ignore_errors=True)

    def _apply(self, tx: Path, op: SwapOp) -> None:
        """One idempotent swap: old → backup, staged → old (either may already be done)."""
        target = self.table_path(op.table) / op.part if op.part else self.table_path(op.table)
        backup = tx / "backup" / op.table / (op.part or "_table")
        staged = tx / op.staged if op.staged else None
        if staged is not None and not staged.exists():
            return  # already moved into place by an earlier (interrupted) attempt
        if target.exists():
            if backup.exists():
                raise RuntimeError(f"journal replay found both {target} and {backup}")
            backup.parent.mkdir(parents=True, exist_ok=True)
            os.rename(target, backup)
        if staged is not None:
            target.parent.mkdir(parents=True, exist_ok=True)
            os.rename(staged, target)
            _fsync_dir(target.parent)

    # -- recovery -------------------------------------------------------------------------
    def recover(self) -> list[str]:
        """Finish interrupted commits and remove abandoned staging; say what was done."""
        done: list[str] = []
        with self._locked():
            for journal in sorted((self.internal / "journal").glob("*.json")):
                doc = json.loads(journal.read_text(encoding="utf-8"))
                tx = self.internal / "tx" / doc["tx"]
                for op in doc["ops"]:
                    self._apply(tx, SwapOp(**op))
                _fsync_dir(self.root)
                journal.unlink()
                shutil.rmtree(tx, ignore_errors=True)
                tables = sorted({op["table"] for op in doc["ops"]})
                done.append(
                    f"completed an interrupted publish of {', '.join(tables)} "
                    f"(journal {journal.name}, written {doc.get('written_at')})"
                )
            for tx in sorted((self.internal / "tx").iterdir()):
                if _orphan(tx):
                    shutil.rmtree(tx, ignore_errors=True)
                    done.append(f"removed the staging of an interrupted run ({tx.name})")
        return done

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        if fcntl is None:  # pragma: no cover
            yield
            return
        fd = os.open(self.internal / "lock", os.O_CREAT | os.O_RDWR, 0o644)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX)
            yield
        finally:
            os.close(fd)


def _orphan(tx: Path) -> bool:
    """A staging folder whose transaction can no longer commit (its process is gone)."""
    host, _, rest = tx.name.partition("~")
    pid_text = rest.partition("~")[0]
    if host != socket.gethostname() or not pid_text.isdigit():
        return False  # another host's transaction: never presumed dead
    pid = int(pid_text)
    if pid == os.getpid():
        return str(tx) not in _ACTIVE
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def _write_durably(path: Path, text: str) -> None:
    tmp = path.with_name(f".{path.name}.{secrets.token_hex(4)}.tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        f.write(text)
        f.flush()
        os.fsync(f.fileno())
    os.replace(tmp, path)
    _fsync_dir(path.parent)


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)
