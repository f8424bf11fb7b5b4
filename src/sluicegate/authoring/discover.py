"""What a feed looks like before any contract exists: its files, format and field names.

``sluicegate init`` needs names before it can ask the engine anything: NDJSON keys come
from a sample of lines (parsed with Python's strict ``json``; a corrupt line contributes
no names), a CSV header from the first line with its delimiter sniffed, Parquet names
from the file footers. Field names that cannot be declared (not identifiers, or starting
with ``_``) and rare keys are reported, never silently dropped.
"""

from __future__ import annotations

import csv
import io
import json
import os
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..contract.models import SQL_IDENT
from ..errors import UsageError
from ..run.bind import list_files

#: Lines sampled per file for NDJSON names (the profile itself reads every line).
SAMPLE_LINES = 5000
#: A key present in fewer well-formed records than this share is not declared (drift).
RARE_KEY_SHARE = 0.01
EXTENSIONS = {
    ".json": "ndjson",
    ".jsonl": "ndjson",
    ".ndjson": "ndjson",
    ".csv": "csv",
    ".tsv": "csv",
    ".txt": "csv",
    ".parquet": "parquet",
    ".pq": "parquet",
}


@dataclass
class Discovered:
    """A feed's files and declarable fields, with what was left out and why."""

    path: str  # as given (file, folder or glob)
    files: list[str]
    format: str
    fields: list[str]
    delimiter: str = ","
    partitions: list[str] = field(default_factory=list)
    left_out: list[str] = field(default_factory=list)  # sentences for the draft's header


class _Here:
    """Paths resolve against the working directory (``list_files`` wants a contract)."""

    def resolve_path(self, p: str) -> Path:
        return Path(os.path.expanduser(p)).absolute()


class _Spec:
    def __init__(self, path: str) -> None:
        self.path = path


def discover(path: str, fmt: str | None = None) -> Discovered:
    """List ``path``'s files and find their declarable fields.

    Raises:
        UsageError: no file, an unknown format, or no field that can be declared.
    """
    files = list_files(_Here(), _Spec(path), "--from")  # type: ignore[arg-type]
    if not files:
        raise UsageError(f"--from {path} matches no file")
    fmt = (fmt or _format_of(files[0])).lower()
    d = Discovered(path=path, files=files, format=fmt, fields=[])
    d.partitions = _hive_partitions(path, files)
    if fmt == "ndjson":
        names, counts, records = _json_names(files)
        for name in names:
            if counts[name] < RARE_KEY_SHARE * records:
                d.left_out.append(
                    f"field '{name}' is in {counts[name]:,} of {records:,} records: not "
                    "declared (it is kept in _rescued_data and reported as drift)"
                )
            else:
                d.fields.append(name)
    elif fmt == "csv":
        d.delimiter, header = _csv_header(files[0])
        d.fields = header
    elif fmt == "parquet":
        import pyarrow.parquet as pq

        d.fields = list(pq.read_schema(files[0]).names)
    else:
        raise UsageError(f"unknown format '{fmt}': use --format ndjson, csv or parquet")
    declarable = []
    for name in d.fields:
        if name in d.partitions:
            continue
        if not re.match(SQL_IDENT, name) or name.startswith("_"):
            d.left_out.append(
                f"field '{name}' cannot be declared (a column name is an identifier not "
                "starting with _): it is kept in _rescued_data"
            )
        else:
            declarable.append(name)
    d.fields = declarable
    if not d.fields:
        raise UsageError(f"no field of {path} can be declared as a column")
    return d


def _format_of(file: str) -> str:
    ext = Path(file).suffix.lower()
    if ext not in EXTENSIONS:
        raise UsageError(
            f"cannot tell the format of {file} from its extension: pass --format ndjson, "
            "csv or parquet"
        )
    return EXTENSIONS[ext]


def _hive_partitions(path: str, files: list[str]) -> list[str]:
    """``name=value`` folders below the given folder (they become VARCHAR columns)."""
    root = Path(path).absolute()
    names: list[str] = []
    for f in files:
        try:
            parts = Path(f).parent.relative_to(root).parts
        except ValueError:
            parts = ()
        for part in parts:
            n = part.split("=", 1)[0] if "=" in part else ""
            if n and re.match(SQL_IDENT, n) and not n.startswith("_") and n not in names:
                names.append(n)
    return names


def _json_names(files: list[str]) -> tuple[list[str], dict[str, int], int]:
    """Top-level keys of well-formed sample records, in first-seen order, with counts."""
    order: list[str] = []
    counts: dict[str, int] = {}
    records = 0
    per_file = max(200, SAMPLE_LINES * 4 // max(len(files), 1))
    for f in files:
        with open(f, encoding="utf-8", errors="replace") as fh:
            for i, line in enumerate(fh):
                if i >= per_file:
                    break
                try:
                    obj = json.loads(line)
                except ValueError:
                    continue  # corrupt or blank: no names from it
                if not isinstance(obj, dict):
                    continue
                records += 1
                for k in obj:
                    if k not in counts:
                        order.append(k)
                        counts[k] = 0
                    counts[k] += 1
    if not records:
        raise UsageError(f"no line of {files[0]} … is a JSON object: is the format right?")
    return order, counts, records


def _csv_header(file: str) -> tuple[str, list[str]]:
    """The delimiter (sniffed among , ; tab |) and the header names of ``file``."""
    with open(file, encoding="utf-8-sig", errors="replace") as fh:
        head = [line for _, line in zip(range(50), fh, strict=False) if line.strip()]
    if not head:
        raise UsageError(f"{file} is empty: nothing to draft a contract from")
    try:
        delimiter = csv.Sniffer().sniff("".join(head), delimiters=",;\t|").delimiter
    except csv.Error:
        delimiter = ","
    names = next(csv.reader(io.StringIO(head[0]), delimiter=delimiter))
    return delimiter, [n.strip() for n in names]
