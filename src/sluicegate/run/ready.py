"""Upstream readiness (``source.ready_when``): is the feed complete enough to run on?

Orchestrators start runs on a clock; upstream jobs finish when they finish. A producer
that writes a marker (``_SUCCESS``, ``manifest.json``) after its last file tells us the
input is complete. Without the marker the run stops before binding anything — no lock,
no read, nothing published — and exits 4 (``NotReadyError``), which a scheduler retries,
distinct from 1 (bad data) and 2 (a broken contract).
"""

from __future__ import annotations

import glob
import os
from pathlib import Path

from ..contract.loader import LoadedContract
from ..errors import NotReadyError

_MAGIC = "*?["


def marker_base(loaded: LoadedContract) -> Path:
    """Where a relative marker lives: the source folder, or the folder of a file or glob."""
    raw = loaded.contract.source.path
    path = loaded.resolve_path(raw)
    if any(ch in raw for ch in _MAGIC):
        parts = []
        for part in path.parts:
            if any(ch in part for ch in _MAGIC):
                break
            parts.append(part)
        return Path(*parts) if parts else Path(".")
    if path.is_dir() or not path.suffix:
        return path  # an existing folder, or a folder the producer has not created yet
    return path.parent


def marker_path(loaded: LoadedContract) -> Path | None:
    marker = loaded.contract.source.ready_when
    if not marker:
        return None
    m = Path(os.path.expanduser(marker))
    return m if m.is_absolute() else marker_base(loaded) / m


def check_ready(loaded: LoadedContract) -> Path | None:
    """Raise :class:`NotReadyError` unless the marker exists; return the marker found."""
    from .bind_s3 import is_s3, marker_uri, object_exists, settings_of

    if loaded.contract.source.ready_when and is_s3(loaded.contract.source.path):
        uri = marker_uri(loaded.contract.source)
        if not object_exists(uri, settings_of(loaded)):
            raise NotReadyError(
                f"source of contract '{loaded.contract.name}' is not ready: "
                f"marker {uri} does not exist (source.ready_when)",
                hint="the upstream job has not finished writing this input; retry later "
                "(exit code 4 — schedulers should retry, not alert). Nothing was published.",
            )
        return None
    m = marker_path(loaded)
    if m is None:
        return None
    text = str(m)
    found = glob.glob(text) if any(ch in text for ch in _MAGIC) else ([text] if m.exists() else [])
    if not found:
        raise NotReadyError(
            f"source of contract '{loaded.contract.name}' is not ready: "
            f"marker {text} does not exist (source.ready_when)",
            hint="the upstream job has not finished writing this input; retry later "
            "(exit code 4 — schedulers should retry, not alert). Nothing was published.",
        )
    return Path(sorted(found)[0])
