"""Stage 1: bind the input — the file manifest, the raw record count, the schema fingerprint.

The raw record count is taken here, from the bytes, independently of the parser: the
ledger compares the outputs against it. A record is a non-blank line (NDJSON, CSV after
its header line) or a Parquet row. Lines end at LF only; a line is blank when nothing but
spaces, tabs and CRs remain after removing a UTF-8 BOM at the very start of the file.
Blank lines are not records and are counted apart. Canonical forms (fingerprint,
binding digest, run id) are in docs/contract-reference.md § "Input binding".
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..contract.loader import LoadedContract
from ..contract.models import Source, TableSource
from ..contract.partitions import partition_names
from ..errors import InputError
from .bind_s3 import bind_object, changed_objects, is_s3, list_objects, object_root, settings_of

CHUNK = 8 << 20
BOM = b"\xef\xbb\xbf"
BLANK_BYTES = b" \t\r"
_NL, _SP, _TAB, _CR = 10, 32, 9, 13


@dataclass(frozen=True)
class BoundFile:
    """One input file as bound: path, size, mtime, SHA-256, record and blank-line counts."""

    path: str
    size: int
    mtime: float
    sha256: str
    records: int
    blank_lines: int


@dataclass
class Binding:
    """The exact input of a run.

    ``root`` is the folder the source path names (the non-wildcard part of a glob);
    ``partitions`` the declared partition columns; ``undeclared_partitions`` the Hive
    folder names found below ``root`` that the contract does not declare (drift).
    """

    files: list[BoundFile] = field(default_factory=list)
    format: str = "ndjson"
    root: str = ""
    partitions: list[str] = field(default_factory=list)
    undeclared_partitions: list[str] = field(default_factory=list)
    #: source.format: iceberg / delta — the bound snapshot or version (bind_iceberg below,
    #: run/bind_delta.py)
    snapshot: dict | None = None
    #: an ``s3://`` source: the object store settings it was bound with (run/bind_s3.py)
    s3: Any = field(default=None, repr=False, compare=False)
    #: False when the bound records cannot change under the run because they were
    #: captured at the bind (a Kafka batch, held with its SHA-256 in the offsets ledger):
    #: there is no file to re-check before the publish (run/publish.py)
    files_can_change: bool = True

    @property
    def raw_records(self) -> int:
        return sum(f.records for f in self.files)

    @property
    def blank_lines(self) -> int:
        return sum(f.blank_lines for f in self.files)

    @property
    def total_bytes(self) -> int:
        """The bound files' total size: what the engine sizes its buffer by."""
        return sum(f.size for f in self.files)

    @property
    def digest(self) -> str:
        """SHA-256 of compact JSON ``[[path, size, sha256], …]``: content and place, not mtime."""
        doc = [[f.path, f.size, f.sha256] for f in self.files]
        return hashlib.sha256(_compact(doc).encode("utf-8")).hexdigest()

    def manifest(self) -> list[dict]:
        return [asdict(f) for f in self.files]


def _compact(doc: object) -> str:
    return json.dumps(doc, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _skipped(part: str) -> bool:
    """Hidden and underscore names (``.crc``, ``_SUCCESS``, ``_temporary/``) are not data."""
    return part.startswith((".", "_"))


def list_files(loaded: LoadedContract, spec: TableSource, what: str) -> list[str]:
    """Expand a file, a directory (recursively) or a glob into a sorted list of files.

    Directories and globs skip hidden and underscore-prefixed names below the source
    folder; a path that does not exist is an input error, an empty folder or a glob that
    matches nothing is an empty input. Sorted by absolute path (code point order, which is
    the byte order of ``_source_file`` in SQL).
    """
    from .guards import check_file, check_root, walk_files

    raw = spec.path
    if is_s3(raw):
        return list_objects(loaded, spec, what)
    path = loaded.resolve_path(raw)
    text = str(path)
    follow = getattr(spec, "follow_symlinks", False)
    if any(ch in raw for ch in "*?["):
        base = glob_root(text)
        check_root(base, what)
        files = [
            p
            for p in glob.glob(text, recursive=True)
            if not os.path.isdir(p) and not any(_skipped(x) for x in _below(p, base))
        ]
    elif path.is_dir():
        base = text
        check_root(base, what)
        files = [
            p
            for p in walk_files(text, what)
            if not any(_skipped(x) for x in Path(p).relative_to(path).parts)
        ]
    elif path.exists() or path.is_symlink():
        base = str(path.parent)
        check_root(text, what)
        files = [text]
    else:
        raise InputError(
            f"{what} path '{raw}' does not exist (resolved to {text})",
            hint="check the path in the contract, or pass --var to point it elsewhere",
        )
    for f in files:
        check_file(f, base, what, follow_symlinks=follow)
    return sorted({os.path.abspath(f) for f in files})


def glob_root(pattern: str) -> str:
    """The folder part of a glob before its first wildcard."""
    parts = Path(pattern).parts
    fixed = []
    for part in parts:
        if any(ch in part for ch in "*?["):
            break
        fixed.append(part)
    return str(Path(*fixed)) if fixed else "."


def _below(path: str, root: str) -> tuple[str, ...]:
    try:
        return Path(os.path.abspath(path)).relative_to(os.path.abspath(root)).parts
    except ValueError:
        return Path(path).parts[-1:]


class LineCounter:
    """Counts records and blank lines of a byte stream fed in chunks (bounded memory).

    Complete lines are classified with numpy: a line is blank when it is empty or holds
    only spaces, tabs and CRs; only lines starting with such a byte are inspected one by one.
    """

    def __init__(self) -> None:
        self.records = 0
        self.blanks = 0
        self._tail = b""
        self._first = True

    def feed(self, chunk: bytes) -> None:
        data = self._tail + chunk if self._tail else chunk
        cut = data.rfind(b"\n")
        if cut < 0:
            self._tail = self._squeeze(data)
            return
        self._lines(data[: cut + 1])
        self._tail = data[cut + 1 :]

    def _squeeze(self, tail: bytes) -> bytes:
        """A long unfinished line stands in for itself by one byte: only whether it is blank
        matters, and re-joining a 200 MB line chunk by chunk was quadratic (10 s, 700 MB)."""
        if len(tail) <= SQUEEZE_ABOVE:
            return tail
        head = BOM if self._first and tail.startswith(BOM) else b""
        return head + (b"x" if tail[len(head) :].strip(BLANK_BYTES) else b" ")

    def finish(self) -> tuple[int, int]:
        """(records, blank lines); the last line may lack its LF."""
        if self._tail:
            self._lines(self._tail + b"\n")
            self._tail = b""
        return self.records, self.blanks

    def _lines(self, block: bytes) -> None:
        if self._first:
            self._first = False
            if block.startswith(BOM):
                block = block[len(BOM) :]
        arr = np.frombuffer(block, dtype=np.uint8)
        ends = np.flatnonzero(arr == _NL)
        starts = np.empty_like(ends)
        starts[:1] = 0
        starts[1:] = ends[:-1] + 1
        first = arr[starts]  # the LF itself for an empty line
        maybe = (first == _SP) | (first == _TAB) | (first == _CR) | (first == _NL)
        blanks = 0
        for i in np.flatnonzero(maybe).tolist():
            if not block[starts[i] : ends[i]].strip(BLANK_BYTES):
                blanks += 1
        self.blanks += blanks
        self.records += len(ends) - blanks


#: an unfinished line longer than this is kept as one byte (LineCounter._squeeze)
SQUEEZE_ABOVE = 1 << 16


def count_lines(data: bytes) -> tuple[int, int]:
    """(non-blank lines, blank lines) of a whole file's bytes.

    >>> count_lines(b'\\xef\\xbb\\xbf{"a":1}\\r\\n\\r\\n  \\n{"a":2}')
    (2, 2)
    """
    counter = LineCounter()
    counter.feed(data)
    return counter.finish()


def changed_since_bind(files: list[BoundFile], s3_settings: Any = None) -> list[str]:
    """Bound files whose size or mtime differ now (or that are gone): a rewrite after the
    bind would publish values the manifest's SHA-256 does not describe."""
    s3 = [(f.path, f.size, f.mtime) for f in files if is_s3(f.path)]
    out = changed_objects(s3, s3_settings) if s3 and s3_settings is not None else []
    for f in files:
        if is_s3(f.path):
            continue
        try:
            st = os.stat(f.path)
        except OSError:
            out.append(f"{f.path} (gone)")
            continue
        if st.st_size != f.size or st.st_mtime != f.mtime:
            out.append(f.path)
    return out


def bind_file(path: str, fmt: str, *, csv_header: bool = True) -> BoundFile:
    """Hash the file and count its records from the raw bytes."""
    h = hashlib.sha256()
    counter = LineCounter()
    try:
        st = os.stat(path)
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(CHUNK), b""):
                h.update(chunk)
                if fmt not in ("parquet", "iceberg"):
                    counter.feed(chunk)
    except OSError as exc:  # chmod 000, a file removed meanwhile: say so (exit 2)
        raise InputError(
            f"cannot read input file {path}: {exc.strerror}",
            hint="give the user running sluicegate read permission, or remove the file",
        ) from None
    if fmt in ("parquet", "iceberg"):
        records, blanks = parquet_rows(path), 0
    else:
        records, blanks = counter.finish()
        if fmt == "csv" and csv_header and records:
            records -= 1  # the first non-blank line is the header, not a record
    return BoundFile(path, st.st_size, st.st_mtime, h.hexdigest(), records, blanks)


def parquet_rows(path: str) -> int:
    """Row count from the Parquet footer (pyarrow), independent of the engine."""
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(path).metadata.num_rows  # an Iceberg data file is Parquet too
    except Exception as exc:  # noqa: BLE001 - any footer problem is an input error
        raise InputError(f"{path}: not a readable Parquet file ({exc})") from None


def bind_files(files: list[str], spec: TableSource, s3: Any = None) -> list[BoundFile]:
    """Bind files in parallel threads (hashing and numpy release the GIL), in path order.
    ``s3``: the settings ``s3://`` objects are read with (run/bind_s3.py)."""
    header = spec.csv.header if spec.csv is not None else True

    def one(f: str) -> BoundFile:
        if is_s3(f):
            return BoundFile(*bind_object(f, spec.format, s3, LineCounter(), csv_header=header))
        return bind_file(f, spec.format, csv_header=header)

    if len(files) <= 1:
        return [one(f) for f in files]
    workers = min(len(files), max(os.cpu_count() or 1, 2), 8)
    with ThreadPoolExecutor(max_workers=workers) as pool:
        return list(pool.map(one, files))


def source_root(loaded: LoadedContract, spec: TableSource) -> str:
    """The folder partition discovery looks below: the path, its glob root or its parent."""
    if is_s3(spec.path):
        return object_root(spec)
    path = loaded.resolve_path(spec.path)
    if any(ch in spec.path for ch in "*?["):
        return os.path.abspath(glob_root(str(path)))
    return os.path.abspath(path if path.is_dir() else path.parent)


def bind(loaded: LoadedContract, files: list[str] | None = None) -> Binding:
    """Bind the source of ``loaded``: every file under its path, or only ``files`` (a
    micro-batch's new files, run/incremental.py; absolute paths below the source path)."""
    spec: Source = loaded.contract.source
    if spec.format == "iceberg":
        return bind_iceberg(loaded)
    if spec.format == "delta":
        from .bind_delta import bind_delta

        fields, doc, s3 = bind_delta(loaded)
        files = [BoundFile(*f) for f in fields]
        return Binding(files=files, format="delta", root="", partitions=[], snapshot=doc, s3=s3)
    files = list_files(loaded, spec, "source") if files is None else sorted(files)
    s3 = settings_of(loaded) if is_s3(spec.path) else None
    return Binding(
        files=bind_files(files, spec, s3),
        format=spec.format,
        root=source_root(loaded, spec),
        partitions=partition_names(spec),
        s3=s3,
    )


def schema_fingerprint(spec: TableSource) -> str:
    """SHA-256 of compact UTF-8 JSON of ``[{"name","nullable","type"}, …]``, keys sorted.

    Field order is the declared order; ``type`` is the canonical upper-case spelling
    (``DECIMAL(10,2)``, ``INTEGER``, ``VARCHAR``); non-ASCII names stay UTF-8 (not
    ``\\u`` escapes). The fixed vector in tests/unit/test_fingerprint.py pins the form.
    """
    fields = [
        {"name": name, "nullable": c.nullable, "type": c.parsed.canonical}
        for name, c in spec.columns.items()
    ]
    return hashlib.sha256(_compact(fields).encode("utf-8")).hexdigest()


def run_id(loaded: LoadedContract, binding: Binding) -> str:
    """Same contract, digest, logical date and input → same run id.

    The first 20 hex digits of SHA-256 over compact JSON
    ``[contract name, contract digest, logical date, binding digest]``.
    """
    doc = [loaded.contract.name, loaded.digest, loaded.logical_date, binding.digest]
    return hashlib.sha256(_compact(doc).encode("utf-8")).hexdigest()[:20]


def resolve(loaded: LoadedContract, p: str) -> Path:
    return loaded.resolve_path(p)


def bind_iceberg(loaded: LoadedContract) -> Binding:
    """Bind an Iceberg source: the snapshot, and its data files as the run's manifest (the
    summary's ``total-records`` is the ledger's independent count; the footers must agree)."""
    from dataclasses import asdict

    from ..engines.iceberg_source import SnapshotProblem, bind_snapshot
    from ..workspace import iceberg_catalog

    spec = loaded.contract.source
    assert spec.catalog is not None and spec.table is not None
    try:
        snap = bind_snapshot(
            iceberg_catalog(loaded, spec.catalog), spec.table, spec.snapshot_id, spec.as_of
        )
    except SnapshotProblem as p:
        err = loaded.located(loaded.error(("source", p.key), p.message))
        err.hint = p.hint  # after located(): it rebuilds the error (redacted), hint-less
        raise err from None
    files = bind_files(snap.data_files, spec)
    footers = sum(f.records for f in files)
    if footers != snap.record_count:
        raise InputError(
            f"snapshot {snap.snapshot_id} of '{spec.table}': its summary counts "
            f"{snap.record_count} records, its data files {footers}",
            hint="the table's metadata and files disagree; inspect it with pyiceberg",
        )
    doc = asdict(snap)
    doc.pop("data_files")
    return Binding(files=files, format="iceberg", root="", partitions=[], snapshot=doc)
