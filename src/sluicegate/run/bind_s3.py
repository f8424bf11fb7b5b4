"""Binding a source on S3 (``source.path: s3://bucket/prefix``): list, hash, count.

The same binding as for local files (run/bind.py): every object below the prefix (hidden
and underscore names skipped, as locally), or the objects a glob matches, each hashed
(SHA-256) and its records counted from the bytes as they stream in — independently of
the engine that reads them afterwards. ``mtime`` is the object's last-modified time;
a rerun bound to the same objects gets the same run id (the digest is path, size and
SHA-256, as locally).

Globs: ``*`` and ``?`` match within and across ``/`` (``fnmatch`` on the key, S3 has no
folders); the listing starts at the key prefix before the first wildcard.
"""

from __future__ import annotations

import fnmatch
import hashlib
from typing import TYPE_CHECKING, Any

from ..engines.object_store import S3Settings, canonical, is_s3, key_path
from ..errors import InputError

if TYPE_CHECKING:
    from ..contract.loader import LoadedContract
    from ..contract.models import TableSource

CHUNK = 8 << 20


def settings_of(loaded: LoadedContract) -> S3Settings:
    """The contract's ``object_store:`` settings, the AWS environment filling the gaps."""
    return S3Settings.resolve(loaded.contract.object_store)


def _skipped_below(key: str, root: str) -> bool:
    rel = key[len(root) :].lstrip("/") if key.startswith(root) else key.rsplit("/", 1)[-1]
    return any(p.startswith((".", "_")) for p in rel.split("/") if p)


def list_objects(loaded: LoadedContract, spec: TableSource, what: str) -> list[str]:
    """The ``s3://`` URIs a source path names, sorted (see the module docstring)."""
    import pyarrow.fs as pafs

    uri = canonical(spec.path)
    fs = settings_of(loaded).arrow_fs()
    path = key_path(uri)
    wild = any(ch in path for ch in "*?[")
    root = _glob_root(path) if wild else path
    try:
        info = fs.get_file_info(root)
        if not wild and info.type == pafs.FileType.File:
            return [uri]
        listing = fs.get_file_info(pafs.FileSelector(root, recursive=True, allow_not_found=True))
    except OSError as exc:
        raise InputError(
            f"{what} path '{spec.path}': the object store refused the listing "
            f"({str(exc).splitlines()[0]})",
            hint="check object_store: (endpoint, region) and the credentials",
        ) from None
    if not wild and info.type == pafs.FileType.NotFound and not listing:
        raise InputError(
            f"{what} path '{spec.path}' does not exist (no object or prefix)",
            hint="check the path in the contract, or pass --var to point it elsewhere",
        )
    keys = [
        i.path
        for i in listing
        if i.type == pafs.FileType.File
        and not _skipped_below(i.path, root)
        and (not wild or fnmatch.fnmatchcase(i.path, path))
    ]
    return sorted("s3://" + k for k in keys)


def _glob_root(path: str) -> str:
    parts = path.split("/")
    fixed = []
    for part in parts:
        if any(ch in part for ch in "*?["):
            break
        fixed.append(part)
    return "/".join(fixed)


def bind_object(
    uri: str, fmt: str, s3: S3Settings, counter: Any, *, csv_header: bool = True
) -> tuple[str, int, float, str, int, int]:
    """Hash the object and count its records from the bytes (``counter``: bind.py's
    ``LineCounter``): the fields of a ``BoundFile``, as ``bind.bind_file`` makes them."""
    fs = s3.arrow_fs()
    h = hashlib.sha256()
    try:
        info = fs.get_file_info(key_path(uri))
        with fs.open_input_stream(key_path(uri)) as f:
            for chunk in iter(lambda: f.read(CHUNK), b""):
                h.update(chunk)
                if fmt != "parquet":
                    counter.feed(chunk)
    except OSError as exc:
        raise InputError(
            f"cannot read input object {uri}: {str(exc).splitlines()[0]}",
            hint="check the credentials' read permission on the bucket",
        ) from None
    if fmt == "parquet":
        import pyarrow.parquet as pq

        try:
            records, blanks = pq.ParquetFile(fs.open_input_file(key_path(uri))).metadata.num_rows, 0
        except Exception as exc:  # noqa: BLE001 - any footer problem is an input error
            raise InputError(f"{uri}: not a readable Parquet file ({exc})") from None
    else:
        records, blanks = counter.finish()
        if fmt == "csv" and csv_header and records:
            records -= 1
    mtime = info.mtime.timestamp() if info.mtime is not None else 0.0
    return (uri, info.size or 0, mtime, h.hexdigest(), records, blanks)


def hash_object(uri: str, records: int, s3: S3Settings) -> tuple[str, int, float, str, int, int]:
    """A ``BoundFile``'s fields for an object whose record count is known already (a Delta
    data file: its add action's ``numRecords``): hashed as it streams, never counted."""
    fs = s3.arrow_fs()
    h = hashlib.sha256()
    try:
        info = fs.get_file_info(key_path(uri))
        with fs.open_input_stream(key_path(uri)) as f:
            for chunk in iter(lambda: f.read(CHUNK), b""):
                h.update(chunk)
    except OSError as exc:
        raise InputError(
            f"cannot read Delta data file {uri}: {str(exc).splitlines()[0]}",
            hint="the log lists an object that is gone or unreadable (a VACUUM too short?, "
            "no read permission?); bind a version whose files exist",
        ) from None
    mtime = info.mtime.timestamp() if info.mtime is not None else 0.0
    return (uri, info.size or 0, mtime, h.hexdigest(), records, 0)


def changed_objects(uris: list[tuple[str, int, float]], s3: S3Settings) -> list[str]:
    """Bound objects whose size or last-modified time differ now (or that are gone)."""
    import pyarrow.fs as pafs

    fs = s3.arrow_fs()
    out = []
    for uri, size, mtime in uris:
        info = fs.get_file_info(key_path(uri))
        if info.type != pafs.FileType.File:
            out.append(f"{uri} (gone)")
        elif info.size != size or (info.mtime is not None and info.mtime.timestamp() != mtime):
            out.append(uri)
    return out


def object_root(spec: TableSource) -> str:
    """The prefix partition discovery, ``ready_when`` and DLQ listings work below: a
    glob's fixed part, the "folder" of a path naming one object (a last segment with a
    dot), else the prefix itself."""
    path = canonical(spec.path).rstrip("/")
    if any(ch in path for ch in "*?["):
        return "s3://" + _glob_root(key_path(path))
    if "." in path.rsplit("/", 1)[-1]:
        return path.rsplit("/", 1)[0]
    return path


def marker_uri(spec: TableSource) -> str:
    """``source.ready_when`` on S3: relative to the prefix (a glob's fixed part), or to the
    object's "folder" when the path names one object (a last segment with a dot)."""
    marker = str(getattr(spec, "ready_when", None) or "").lstrip("/")
    return f"{object_root(spec)}/{marker}"


def object_exists(uri: str, s3: S3Settings) -> bool:
    import pyarrow.fs as pafs

    try:
        return s3.arrow_fs().get_file_info(key_path(uri)).type == pafs.FileType.File
    except OSError as exc:
        raise InputError(
            f"cannot check the marker {uri}: {str(exc).splitlines()[0]}",
            hint="check object_store: (endpoint, region) and the credentials",
        ) from None


__all__ = [
    "bind_object",
    "canonical",
    "hash_object",
    "changed_objects",
    "is_s3",
    "list_objects",
    "marker_uri",
    "object_exists",
    "object_root",
]
