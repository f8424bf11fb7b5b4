"""A PostgreSQL serving connection through the ADBC PostgreSQL driver: statements, a
binary COPY of Arrow batches, one transaction — the only module that imports the driver.

Why ADBC rather than psycopg 3: measured on this machine (benchmarks/serve_drivers.py,
docs/serving.md) ADBC's ``adbc_ingest`` — a binary COPY straight from Arrow buffers —
moved 986k fact rows in 7.1–9.9 s against 11.2–20.0 s for psycopg's COPY fed CSV rendered
by Arrow's C++ writer (median 9.3 vs 16.5 s, 1.8x): the server no longer parses text
numbers, decimals and timestamps. Both give one explicit transaction on one connection,
SQLSTATE codes on errors, and a clean ``OperationalError`` when the server dies mid-load.

Every driver error becomes a :class:`~sluicegate.errors.ServeError`: one line, SQLSTATE
when known, never the password (the URL is always shown with ``***``).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qsl, quote, urlencode, urlsplit, urlunsplit

import adbc_driver_manager
import adbc_driver_postgresql.dbapi as adbc
import pyarrow as pa
from sqlglot import exp
from sqlglot.errors import ErrorLevel

from ..contract.secret import Secret, reveal
from ..errors import ServeError


def _render(statement: exp.Expression) -> str:
    return statement.sql(dialect="postgres", unsupported_level=ErrorLevel.RAISE)


def connect_uri(url: str, password: str | None, connect_timeout: int) -> str:
    """libpq URI with the password (if given separately) and a connect timeout set."""
    parts = urlsplit(url)
    netloc = parts.netloc
    if password is not None:
        user = quote(parts.username or "", safe="")
        host = parts.hostname or ""
        if ":" in host:  # IPv6 literal
            host = f"[{host}]"
        port = f":{parts.port}" if parts.port else ""
        netloc = f"{user}:{quote(password, safe='')}@{host}{port}"
    query = dict(parse_qsl(parts.query))
    query.setdefault("connect_timeout", str(connect_timeout))
    scheme = "postgresql"
    return urlunsplit((scheme, netloc, parts.path, urlencode(query), parts.fragment))


class PostgresTarget:
    """One connection to a serving database, in one explicit transaction.

    ``label`` names the target in errors (the target's name and its URL without password).
    """

    def __init__(
        self,
        url: str,
        *,
        password: Secret | str | None,
        label: str,
        connect_timeout: int = 10,
    ) -> None:
        self.label = label
        password = reveal(password)  # the driver boundary: the only place it is plain
        self._secrets = [s for s in (password, urlsplit(url).password) if s]
        with self._mapped("connect"):
            self.conn = adbc.connect(connect_uri(url, password, connect_timeout), autocommit=False)
            self.cur = self.conn.cursor()

    # -- errors ------------------------------------------------------------------------------
    @contextmanager
    def _mapped(self, what: str) -> Iterator[None]:
        try:
            yield
        except adbc_driver_manager.Error as exc:
            raise ServeError(self._message(what, exc), hint=_hint(exc)) from None
        except (OSError, pa.ArrowException) as exc:
            raise ServeError(self._message(what, exc)) from None

    def _message(self, what: str, exc: BaseException) -> str:
        text = str(exc)
        text = re.sub(
            r"Failed to (execute|prepare) query.*?(ERROR|FATAL):", r"\2:", text, flags=re.S
        )
        text = text.split("Query was:")[0]
        text = " ".join(text.split()) or type(exc).__name__
        for s in self._secrets:
            text = text.replace(s, "***").replace(quote(s, safe=""), "***")
        state = getattr(exc, "sqlstate", None)
        return f"{self.label}: {what} failed" + (f" [{state}]" if state else "") + f": {text}"

    # -- statements --------------------------------------------------------------------------
    def execute(self, statement: exp.Expression, what: str = "statement") -> int:
        """Run one statement; return its row count (-1 when it has none)."""
        with self._mapped(what):
            self.cur.execute(_render(statement))
            return self.cur.rowcount

    def fetch(self, query: exp.Expression, what: str = "query") -> list[tuple]:
        with self._mapped(what):
            self.cur.execute(_render(query))
            return list(self.cur.fetchall())

    def ingest(self, table: str, reader: pa.RecordBatchReader, what: str = "COPY") -> int:
        """Binary COPY of ``reader``'s batches into the existing (temporary) ``table``."""
        with self._mapped(what):
            n = self.cur.adbc_ingest(table, reader, mode="append", temporary=True)
        return int(n)

    # -- transaction -------------------------------------------------------------------------
    def commit(self) -> None:
        with self._mapped("COMMIT"):
            self.conn.commit()

    def rollback(self) -> None:
        try:
            self.conn.rollback()
        except (adbc_driver_manager.Error, OSError):
            pass  # the connection is gone: the server rolled the transaction back

    def close(self) -> None:
        for thing in (getattr(self, "cur", None), getattr(self, "conn", None)):
            try:
                if thing is not None:
                    thing.close()
            except (adbc_driver_manager.Error, OSError):
                pass


def _hint(exc: Any) -> str | None:
    state = getattr(exc, "sqlstate", None) or ""
    text = str(exc)
    if state == "28P01" or "password authentication failed" in text:
        return "check the target's password (serve[].password or the URL); it is never printed"
    if "Connection refused" in text or "timeout expired" in text or "unexpected" in text:
        return (
            "is the PostgreSQL server up? the run is published; `sluicegate serve` loads it later"
        )
    if state.startswith("53") or "No space left" in text or "File too large" in text:
        return "the server is out of disk; nothing of this load is visible"
    return None
