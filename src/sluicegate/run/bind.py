"""Stage 1: bind the input — the file manifest, the raw record count, the schema fingerprint.

The raw record count is taken here, from the bytes, independently of the parser: the
ledger compares the outputs against it. Blank lines are not records and are counted apart.
"""

from __future__ import annotations

import glob
import hashlib
import json
import os
from dataclasses import asdict, dataclass, field
from pathlib import Path

from ..contract.loader import LoadedContract
from ..contract.models import TableSource
from ..errors import InputError

CHUNK = 1 << 20


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
    """The exact input of a run."""

    files: list[BoundFile] = field(default_factory=list)
    format: str = "ndjson"

    @property
    def raw_records(self) -> int:
        return sum(f.records for f in self.files)

    @property
    def blank_lines(self) -> int:
        return sum(f.blank_lines for f in self.files)

    @property
    def digest(self) -> str:
        """SHA-256 over (path, size, sha256) of every file: content, not mtime, names a run."""
        h = hashlib.sha256()
        for f in self.files:
            h.update(json.dumps([f.path, f.size, f.sha256]).encode())
        return h.hexdigest()

    def manifest(self) -> list[dict]:
        return [asdict(f) for f in self.files]


def list_files(loaded: LoadedContract, spec: TableSource, what: str) -> list[str]:
    """Expand a file, a directory (recursively) or a glob into a sorted list of files."""
    raw = spec.path
    path = loaded.resolve_path(raw)
    text = str(path)
    if any(ch in raw for ch in "*?["):
        files = [p for p in glob.glob(text, recursive=True) if os.path.isfile(p)]
    elif path.is_dir():
        files = [
            str(p) for p in path.rglob("*") if p.is_file() and not p.name.startswith((".", "_"))
        ]
    elif path.is_file():
        files = [text]
    else:
        raise InputError(
            f"{what} path '{raw}' does not exist (resolved to {text})",
            hint="check the path in the contract, or pass --var to point it elsewhere",
        )
    return sorted(os.path.abspath(f) for f in files)


def bind_file(path: str, fmt: str) -> BoundFile:
    """Hash the file and count its records from the raw bytes."""
    st = os.stat(path)
    h = hashlib.sha256()
    records = blanks = 0
    if fmt == "parquet":
        with open(path, "rb") as fh:
            for chunk in iter(lambda: fh.read(CHUNK), b""):
                h.update(chunk)
        records = parquet_rows(path)
    else:
        with open(path, "rb") as fh:
            data = fh.read()
        h.update(data)
        records, blanks = count_lines(data)
        if fmt == "csv" and records:
            records -= 1  # the header line is not a record (csv.header defaults to true)
    return BoundFile(path, st.st_size, st.st_mtime, h.hexdigest(), records, blanks)


def count_lines(data: bytes) -> tuple[int, int]:
    """(non-blank lines, blank lines). A line is blank when only whitespace/CR/BOM remain."""
    if not data:
        return 0, 0
    lines = data.split(b"\n")
    if lines and lines[-1] == b"":
        lines.pop()
    blank = sum(1 for ln in lines if not ln.strip(b" \t\r\x0b\x0c").replace(b"\xef\xbb\xbf", b""))
    return len(lines) - blank, blank


def parquet_rows(path: str) -> int:
    """Row count from the Parquet footer (pyarrow), independent of the engine."""
    import pyarrow.parquet as pq

    try:
        return pq.ParquetFile(path).metadata.num_rows
    except Exception as exc:  # noqa: BLE001 - any footer problem is an input error
        raise InputError(f"{path}: not a readable Parquet file ({exc})") from None


def bind(loaded: LoadedContract) -> Binding:
    """Bind the source of ``loaded``."""
    spec = loaded.contract.source
    files = list_files(loaded, spec, "source")
    return Binding([bind_file(f, spec.format) for f in files], spec.format)


def schema_fingerprint(spec: TableSource) -> str:
    """SHA-256 of compact UTF-8 JSON of ``[{"name","nullable","type"}, …]``, keys sorted.

    The fixed vector in tests/unit/test_fingerprint.py pins the canonical form.
    """
    fields = [
        {"name": name, "nullable": c.nullable, "type": c.parsed.canonical}
        for name, c in spec.columns.items()
    ]
    text = json.dumps(fields, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def run_id(loaded: LoadedContract, binding: Binding) -> str:
    """Deterministic: same contract, digest, logical date and input → same run id."""
    h = hashlib.sha256(
        json.dumps(
            [loaded.contract.name, loaded.digest, loaded.logical_date, binding.digest]
        ).encode()
    )
    return h.hexdigest()[:20]


def resolve(loaded: LoadedContract, p: str) -> Path:
    return loaded.resolve_path(p)
