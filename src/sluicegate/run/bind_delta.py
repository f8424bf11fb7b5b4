"""Bind a Delta source (``source.format: delta``): the version, and its data files as the
run's manifest.

Each bound file carries the record count of its add action's ``numRecords`` statistic,
never a count taken by reading it: the raw count is the Delta log's, and the ledger
(run/publish.py) reconciles what the run read and wrote, file by file, against it — a
log that disagrees with its files is a ledger violation (exit 3). The files are hashed
for the binding digest (so the run id names the content) and stat'ed so a file changed
after the bind is refused like any other input (it cannot be: Delta files are immutable).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import asdict
from typing import Any

from ..contract.loader import LoadedContract
from ..errors import InputError
from .guards import check_root

CHUNK = 8 << 20

#: (path, size, mtime, sha256, records, blank lines): the fields of ``bind.BoundFile``,
#: which run/bind.py builds (this module does not import it: bind imports this one)
FileFields = tuple[str, int, float, str, int, int]


def bind_delta(loaded: LoadedContract) -> tuple[list[FileFields], dict[str, Any]]:
    """The files and version document of a Delta source at its pinned (or latest) version."""
    from ..engines.delta_source import DeltaSourceProblem, bind_version

    spec = loaded.contract.source
    path = str(loaded.resolve_path(spec.path))
    check_root(path, "source")
    try:
        bound = bind_version(os.path.abspath(path), spec.version, spec.as_of)
    except DeltaSourceProblem as p:
        err = loaded.error(("source", p.key), p.message)
        err.hint = p.hint
        raise loaded.located(err) from None
    files = [_hash(p, n) for p, n in bound.data_files]
    doc = asdict(bound)
    doc.pop("data_files")
    return files, doc


def _hash(path: str, records: int) -> FileFields:
    h = hashlib.sha256()
    try:
        st = os.stat(path)
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(CHUNK), b""):
                h.update(chunk)
    except OSError as exc:
        raise InputError(
            f"cannot read Delta data file {path}: {exc.strerror}",
            hint="the log lists a file that is gone or unreadable (a VACUUM too short?); "
            "bind a version whose files exist",
        ) from None
    return (path, st.st_size, st.st_mtime, h.hexdigest(), records, 0)
