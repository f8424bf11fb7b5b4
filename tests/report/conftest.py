"""Fixtures of the report, alert and lineage tests: the retail demo run on three logical
dates (so trends have points), and an HTTP receiver on loopback that records what it is
sent (the alert webhook, the OpenLineage endpoint)."""

from __future__ import annotations

import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

import sluicegate

#: (logical date, lines) of the three retail runs: a different feed each day.
RETAIL_DAYS = (("2024-03-01", 1200), ("2024-03-02", 1600), ("2024-03-03", 2000))


@dataclass
class RetailRuns:
    contract: Path
    vars: dict[str, str]
    outcomes: list[Any]
    feeds: list[Path]

    @property
    def last(self) -> Any:
        return self.outcomes[-1]


@pytest.fixture(scope="session")
def retail_runs(tmp_path_factory: pytest.TempPathFactory) -> RetailRuns:
    """The packaged retail contract run on three days, each on its own generated feed."""
    from sluicegate.datagen.retail import generate
    from sluicegate.demo import RETAIL_CONTRACT

    root = tmp_path_factory.mktemp("retail")
    contract = root / "contract.yml"
    contract.write_text(RETAIL_CONTRACT.read_text(encoding="utf-8"), encoding="utf-8")
    outcomes, feeds = [], []
    variables = {
        "warehouse": str(root / "warehouse.duckdb"),
        "export": str(root / "export"),
    }
    for i, (day, lines) in enumerate(RETAIL_DAYS):
        feed = root / f"feed-{day}"
        generate(feed, lines, seed=42 + i)
        feeds.append(feed)
        outcomes.append(
            sluicegate.run(contract, vars={**variables, "root": str(feed)}, logical_date=day)
        )
    return RetailRuns(contract, {**variables, "root": str(feeds[-1])}, outcomes, feeds)


@dataclass
class Receiver:
    """What the loopback server was sent: (path, parsed JSON body) per POST."""

    url: str
    posts: list[tuple[str, Any]] = field(default_factory=list)
    status: int = 200  # what it answers; a test sets 500 to play a broken notifier


@pytest.fixture
def receiver() -> Any:
    """An HTTP server on 127.0.0.1 (a free port) recording every POST; stopped after."""
    state = Receiver(url="")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:  # noqa: N802 - http.server's name
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            try:
                doc = json.loads(body or b"null")
            except ValueError:
                doc = body.decode("utf-8", "replace")
            state.posts.append((self.path, doc))
            self.send_response(state.status)
            self.send_header("Content-Length", "0")
            self.end_headers()

        def log_message(self, *args: Any) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    state.url = f"127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


def orders_contract(dest: Path, extra: str, *, fail_above: float = 0.75) -> Path:
    """A copy of examples/orders with ``extra`` YAML appended and the gate's fail bound
    set (0.1 makes the sample's mostly bad rows fail the gate)."""
    from tests.conftest import copy_orders_example

    copy_orders_example(dest)
    path = dest / "contract.yml"
    text = path.read_text(encoding="utf-8").replace(
        "gate: {warn_above: 0.05, fail_above: 0.75}",
        f"gate: {{warn_above: 0.05, fail_above: {fail_above}}}",
    )
    path.write_text(text + "\n" + extra, encoding="utf-8")
    return path


__all__ = ["RETAIL_DAYS", "Receiver", "RetailRuns", "orders_contract"]
