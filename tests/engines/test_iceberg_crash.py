"""Crash consistency of Iceberg outputs on the embedded engine: SIGKILL a real run mid-publish.

``SLUICEGATE_FAULT=iceberg:journaled`` kills ``sluicegate run`` right after the publish
journal is on disk and before any table's ``main`` moved; ``iceberg:published_first``
kills it after the first table's ``main`` was fast-forwarded. Either way the next open of
the warehouse (a reader's ``sluicegate snapshot`` too) must complete the publish, and
after the rerun every table — read by pyiceberg directly, not through sluicegate — must
equal what one uninterrupted run wrote, no row is there twice, the ledger adds up (from
the metrics and recounted from the tables), and no WAP branch or journal is left behind.

The run under test is a rerun of a logical date with a *changed* input (as
``duckdb/test_crash.py``): it replaces rows of clean, the DLQ inbox and duplicates and
adds facts and a run record, so a half-finished publish shows in every table.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SLUICEGATE
from tests.engines.test_publish import feed, govern_contract, is_wall_clock, run, write_rows
from tests.iceberg_read import catalog

pytestmark = [pytest.mark.duckdb, pytest.mark.slow, pytest.mark.timeout(900)]

DAY = "2024-01-01"
OTHER_DAY = "2023-12-31"
NAMESPACE = "silver"
STATE = ("catalog.db", "iceberg", "wh")  # everything a run writes, under the scene's root
#: the run's snapshot rows name the snapshot ids each table got: new ids on every publish
SNAPSHOT_IDS = {"_sluicegate_snapshots": {"version"}}


def iceberg_contract(root: Path) -> Path:
    """``govern_contract``'s contract (clean, dlq, dups, facts) published into an
    Iceberg SQLite catalog next to it, namespace ``silver``."""
    path = govern_contract(root)
    doc = json.loads(path.read_text(encoding="utf-8"))
    doc["catalogs"] = {
        "lake": {"type": "sql", "uri": "sqlite:///catalog.db", "warehouse": "iceberg"}
    }
    doc["outputs"].update(warehouse="wh", format="iceberg", catalog="lake", namespace=NAMESPACE)
    path.write_text(json.dumps(doc), encoding="utf-8")
    return path


def dump(root: Path) -> dict[str, list[tuple]]:
    """Every table of the namespace at its ``main`` snapshot, read by pyiceberg: rows as
    sorted text tuples, wall-clock columns (and the snapshot ids of the run's snapshot
    rows) left out."""
    cat = catalog(root / "catalog.db", root / "iceberg")
    out: dict[str, list[tuple]] = {}
    for ident in sorted(cat.list_tables(NAMESPACE)):
        name = ident[-1]
        data = cat.load_table(ident).scan().to_arrow()
        skip = SNAPSHOT_IDS.get(name, set())
        cols = [c for c in data.column_names if not is_wall_clock(c) and c not in skip]
        rows = data.select(cols).to_pylist()
        out[name] = sorted((tuple(str(r[c]) for c in cols) for r in rows), key=lambda t: list(t))
    return out


def branches(root: Path) -> dict[str, list[str]]:
    """Refs other than ``main`` on every table (a WAP branch left behind shows here)."""
    cat = catalog(root / "catalog.db", root / "iceberg")
    out = {}
    for ident in cat.list_tables(NAMESPACE):
        refs = [r for r in cat.load_table(ident).metadata.refs if r != "main"]
        if refs:
            out[ident[-1]] = refs
    return out


def journals(root: Path) -> list[Path]:
    return sorted((root / "wh" / ".sluicegate" / "iceberg" / "journal").glob("*.json"))


class Scene:
    """One folder reused by both points, so lineage paths (and run ids) stay the same."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.contract = iceberg_contract(root)
        write_rows(root / "data.json", feed(40, bad=3, dups=2, start=1000))
        assert run(self.contract, OTHER_DAY).status == "pass"  # never to be touched
        write_rows(root / "data.json", feed(40, bad=3, dups=2))
        assert run(self.contract, DAY).status == "pass"
        self.saved = root / "pre"
        for name in STATE:
            copy(root / name, self.saved / name)
        self.pre = dump(root)
        # the changed input: 50 ids (5 fail a > 0) and 3 resends of good ids
        self.lines = write_rows(root / "data.json", feed(50, bad=5, dups=3, start=7))
        clean = run(self.contract, DAY)
        self.status = clean.status
        self.metrics = clean.metrics
        self.post = dump(root)
        assert self.post != self.pre
        assert branches(root) == {} and journals(root) == []

    def restore(self) -> None:
        """Put the catalog, the table files and the warehouse folder back as before the run
        (the catalog's metadata locations are absolute paths into the same folder)."""
        for name in STATE:
            target = self.root / name
            if target.is_dir():
                shutil.rmtree(target)
            elif target.exists():
                target.unlink()
            copy(self.saved / name, target)


def copy(src: Path, dst: Path) -> None:
    dst.parent.mkdir(parents=True, exist_ok=True)
    if src.is_dir():
        shutil.copytree(src, dst)
    else:
        shutil.copy2(src, dst)


@pytest.fixture(scope="module")
def scene(tmp_path_factory: pytest.TempPathFactory) -> Scene:
    return Scene(tmp_path_factory.mktemp("iceberg-crash"))


def killed_run(scene: Scene, point: str) -> subprocess.CompletedProcess:
    env = dict(os.environ, SLUICEGATE_FAULT=point)
    cmd = [*SLUICEGATE, "run", str(scene.contract), "--logical-date", DAY, "-q"]
    return subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)


def assert_conserved(metrics: dict[str, Any], tables: dict[str, list[tuple]], lines: int) -> None:
    """raw = clean + quarantined + duplicates in the metrics, and recounted from the
    published tables (the date's rows of clean, the DLQ inbox and duplicates) against the
    input's line count: 53 lines = 45 clean + 5 quarantined + 3 duplicates."""
    led = metrics["ledger"]
    assert led["raw"] == lines
    assert led["raw"] == led["clean"] + led["quarantined"] + led["duplicates"], led
    assert (led["clean"], led["quarantined"], led["duplicates"]) == (45, 5, 3)
    on_day = {t: [r for r in tables[t] if DAY in r] for t in ("clean", "dlq", "dups")}
    assert len(on_day["clean"]) == led["clean"]
    assert len(on_day["dlq"]) == led["quarantined"]
    assert len(on_day["dups"]) == led["duplicates"]


def assert_no_row_twice(root: Path) -> None:
    """No clean id, DLQ key or duplicate twice in a table; no table with a repeated row."""
    cat = catalog(root / "catalog.db", root / "iceberg")

    def column(table: str, name: str) -> list:
        return cat.load_table(f"{NAMESPACE}.{table}").scan().to_arrow().column(name).to_pylist()

    for table, key in (("clean", "id"), ("dlq", "_dlq_sk")):
        repeated = [k for k, n in Counter(column(table, key)).items() if n > 1]
        assert not repeated, f"{table}: {key} {repeated[:5]} more than once"
    for table, rows in dump(root).items():
        repeated = [r for r, n in Counter(rows).items() if n > 1]
        assert not repeated, f"{table}: {repeated[:2]} more than once"


@pytest.mark.parametrize("point", ["iceberg:journaled", "iceberg:published_first"])
def test_kill_mid_publish_then_rerun_equals_one_clean_run(scene, point):
    scene.restore()
    assert dump(scene.root) == scene.pre
    p = killed_run(scene, point)
    assert p.returncode == -signal.SIGKILL, (point, p.returncode, p.stderr)
    assert journals(scene.root), "the publish journal must be on disk"
    killed = dump(scene.root)
    if point == "iceberg:journaled":
        # a table the run creates exists already, empty, on main (its branch needs a
        # first snapshot); every other table's main is where it was
        assert {t: killed[t] for t in scene.pre} == scene.pre, "main moved before the publish"
        assert all(not killed[t] for t in set(killed) - set(scene.pre))
    else:
        assert killed != scene.pre, "the first table's main did not move"
    assert branches(scene.root), "the dead run's WAP branches should still be there"
    # any open of the warehouse completes the journaled publish: a reader's (snapshot)
    # already sees exactly the clean run's tables, before any rerun
    snap = subprocess.run(
        [*SLUICEGATE, "snapshot", str(scene.contract), "--json"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert snap.returncode == 0, snap.stderr
    assert dump(scene.root) == scene.post, f"{point}: the recovered publish"
    assert branches(scene.root) == {} and journals(scene.root) == []
    doc = json.loads(snap.stdout)
    assert doc["run_id"] == scene.metrics["run_id"]
    cat = catalog(scene.root / "catalog.db", scene.root / "iceberg")
    for table, sid in doc["tables"].items():
        assert cat.load_table(f"{NAMESPACE}.{table}").snapshot_by_id(sid) is not None, table
    again = run(scene.contract, DAY)  # recovers the publish, takes over the dead run's lock
    assert again.status == scene.status
    assert again.metrics["run_id"] == scene.metrics["run_id"]
    tables = dump(scene.root)
    assert tables == scene.post, point
    assert branches(scene.root) == {} and journals(scene.root) == []
    assert_conserved(again.metrics, tables, len(scene.lines.read_text().splitlines()))
    assert_no_row_twice(scene.root)
    # the other date's rows are exactly as before (the rerun replaced its date only)
    assert [r for r in tables["clean"] if OTHER_DAY in r] == [
        r for r in scene.pre["clean"] if OTHER_DAY in r
    ]
