"""Bind a Delta source (``source.format: delta``): the version, and its data files as the
run's manifest.

Each bound file carries the record count of its add action's ``numRecords`` statistic,
never a count taken by reading it: the raw count is the Delta log's, and the ledger
(run/publish.py) reconciles what the run read and wrote, file by file, against it — a
log that disagrees with its files is a ledger violation (exit 3). The files are hashed
for the binding digest (so the run id names the content) and stat'ed so a file changed
after the bind is refused like any other input (it cannot be: Delta files are immutable).

A table on an object store (``source.path: s3://…``) is bound with the contract's
``object_store:`` settings (run/bind_s3.py); its data files are hashed as they stream
from the store, and the settings travel with the binding so the publish can check the
objects again. A store that refuses the keys is an error at ``object_store`` (or at
``source.path`` when the keys come from the AWS environment).
"""

from __future__ import annotations

import hashlib
import os
from dataclasses import asdict
from typing import Any

from ..contract.loader import LoadedContract
from ..errors import InputError
from .bind_s3 import canonical, hash_object, is_s3, settings_of
from .guards import check_root

CHUNK = 8 << 20

#: (path, size, mtime, sha256, records, blank lines): the fields of ``bind.BoundFile``,
#: which run/bind.py builds (this module does not import it: bind imports this one)
FileFields = tuple[str, int, float, str, int, int]


def bind_delta(loaded: LoadedContract) -> tuple[list[FileFields], dict[str, Any], Any]:
    """The files and version document of a Delta source at its pinned (or latest) version,
    and the ``S3Settings`` its files are read with (None for a local table)."""
    from ..engines.delta_source import DeltaSourceProblem, bind_version

    spec = loaded.contract.source
    s3 = settings_of(loaded) if is_s3(spec.path) else None
    if s3 is not None:
        path = canonical(spec.path)
    else:
        path = os.path.abspath(loaded.resolve_path(spec.path))
        check_root(path, "source")
    try:
        bound = bind_version(path, spec.version, spec.as_of, s3)
    except DeltaSourceProblem as p:
        err = loaded.located(loaded.error(_blamed(loaded, p.key), p.message))
        err.hint = p.hint  # after located(): it rebuilds the error (redacted), hint-less
        raise err from None
    files = [hash_object(p, n, s3) if s3 else _hash(p, n) for p, n in bound.data_files]
    doc = asdict(bound)
    doc.pop("data_files")
    return files, doc, s3


def _blamed(loaded: LoadedContract, key: str) -> tuple[str, ...]:
    """The contract key a problem points at: a refusing store is ``object_store`` when the
    contract has that section, else the source path (the keys came from the environment)."""
    if key == "object_store":
        return ("object_store",) if loaded.contract.object_store else ("source", "path")
    return ("source", key)


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
