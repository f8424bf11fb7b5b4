"""A watch keeps its typed references across micro-batches (run/reuse.py): same outputs.

The retail example (three references, the SCD2 ``dim_customer`` built from one, the fact
export and marts) on a real DuckDB file, twice over the same four landed files:

* **kept** — the real watch loop, one file landed after each batch, with the relation
  cache the loop creates;
* **fresh** — the same files one micro-batch each, every relation built (no cache).

Before the third batch, ``products.json`` is rewritten with one product id changed, *same
size and same mtime* (only its SHA-256 tells), and a change is appended to the customer
change log. Both warehouses must hold the same rows in every output and ledger table,
the same run ids and model counts; the changed product's sales must be clean before the
change and quarantined by ``known_product`` after it (counted from the landed JSON lines,
not by sluicegate); each run's published rows must equal its file's lines.
"""

from __future__ import annotations

import json
import os
import shutil
import threading
from collections import Counter
from pathlib import Path
from typing import Any

import duckdb
import pytest

from sluicegate.compile.contract_check import load_contract
from sluicegate.datagen.retail import generate
from sluicegate.run import reuse as reuse_m
from sluicegate.run import watch as watch_m
from sluicegate.run.incremental import Incremental
from sluicegate.run.pipeline import run_contract
from tests.engines.test_watch import Collect

pytestmark = [pytest.mark.duckdb, pytest.mark.timeout(600)]

REPO = Path(__file__).resolve().parents[2]
CONTRACT = REPO / "examples" / "retail" / "contract.yml"
DAY = "2026-12-01"
FILES, LINES = 4, 1_000
CHANGE_BEFORE = 2  # 0-based: the references change before this file's batch
#: columns that say when, not what (compared everywhere else)
WHEN = {"processed_at", "started_at", "published_at", "run_started_at", "evaluated_at"}
WHEN |= {"_dlq_timestamp", "_dlq_recycled_at", "metrics"}
TABLES = (
    "sales_clean",
    "sales_dlq",
    "sales_duplicates",
    "dim_customer",
    "fct_sales",
    "mart_monthly_revenue",
    "mart_top_products",
    "mart_customer_running_revenue",
    "_sluicegate_files",
    "_sluicegate_runs",
    "quality_facts",
)


class Scene:
    """A landing folder with the retail references and the four files' lines."""

    def __init__(self, root: Path, feed: Path) -> None:
        self.root = root
        self.land = root / "land"
        self.sales = self.land / "sales" / "month=2026-12"
        self.sales.mkdir(parents=True)
        for ref in ("products.json", "stores.json", "customers_cdc.json"):
            shutil.copy(feed / ref, self.land / ref)
        lines: list[str] = []
        for part in sorted((feed / "sales").glob("month=*/part-*.json")):
            lines.extend(part.read_text(encoding="utf-8").splitlines(keepends=True))
        self.chunks = [lines[i * LINES : (i + 1) * LINES] for i in range(FILES)]
        self.original = {
            n: ((self.land / n).read_bytes(), (self.land / n).stat().st_mtime_ns)
            for n in ("products.json", "customers_cdc.json")
        }
        self.product = self._changed_product()

    def path(self, i: int) -> Path:
        return self.sales / f"land-{i:03d}.json"

    def land_file(self, i: int) -> None:
        tmp = self.land / f".land-{i:03d}.tmp"
        tmp.write_text("".join(self.chunks[i]), encoding="utf-8")
        os.rename(tmp, self.path(i))

    def products_of(self, i: int) -> Counter:
        out: Counter = Counter()
        for line in self.chunks[i]:
            try:
                rec = json.loads(line)
            except ValueError:
                continue
            if isinstance(rec, dict) and isinstance(rec.get("product_id"), str):
                out[rec["product_id"]] += 1
        return out

    def _changed_product(self) -> str:
        """A product sold before the change and again after it."""
        before = self.products_of(0) + self.products_of(1)
        after = self.products_of(CHANGE_BEFORE) + self.products_of(CHANGE_BEFORE + 1)
        both = [(n, p) for p, n in after.items() if p in before and n >= 2]
        return max(both)[1]

    def change_references(self) -> None:
        """The product unknown from now on, same size and mtime; a customer change added."""
        path = self.land / "products.json"
        st = path.stat()
        old = f'{{"product_id": "{self.product}",'.encode()
        new = f'{{"product_id": "X{self.product[1:]}",'.encode()
        data = path.read_bytes()
        assert data.count(old) == 1
        path.write_bytes(data.replace(old, new))
        os.utime(path, ns=(st.st_atime_ns, st.st_mtime_ns))
        assert (path.stat().st_size, path.stat().st_mtime_ns) == (st.st_size, st.st_mtime_ns)
        with (self.land / "customers_cdc.json").open("a", encoding="utf-8") as fh:
            fh.write(
                '{"customer_id": "C0000001", "effective_ts": "2021-01-01T00:00:00Z", '
                '"segment": "vip", "region": "north"}\n'
            )

    def restore_references(self) -> None:
        for name, (data, mtime) in self.original.items():
            (self.land / name).write_bytes(data)
            os.utime(self.land / name, ns=(mtime, mtime))

    def load(self) -> Any:
        variables = {
            "root": str(self.land),
            "warehouse": str(self.root / "wh.duckdb"),
            "export": str(self.root / "export"),
        }
        return load_contract(CONTRACT, variables=variables, logical_date=DAY)

    def keep_outputs(self, tag: str) -> Path:
        """Move the warehouse and export aside (the next pass writes the same paths)."""
        (self.root / "wh.duckdb").rename(self.root / f"{tag}.duckdb")
        (self.root / "export").rename(self.root / f"export-{tag}")
        return self.root / f"{tag}.duckdb"


class Lander(Collect):
    """Lands the next file (changing the references first, once) after every batch."""

    def __init__(self, scene: Scene) -> None:
        super().__init__()
        self.scene = scene
        self.results: list[Any] = []

    def batch(self, number: int, result: Any) -> None:
        super().batch(number, result)
        self.results.append(result)
        if number < FILES:
            if number == CHANGE_BEFORE:
                self.scene.change_references()
            self.scene.land_file(number)


@pytest.fixture(scope="module")
def passes(tmp_path_factory: pytest.TempPathFactory, request: pytest.FixtureRequest) -> dict:
    feed = tmp_path_factory.mktemp("feed")
    generate(feed, lines=FILES * LINES + 500, seed=11)
    scene = Scene(tmp_path_factory.mktemp("scene"), feed)
    caches: list[reuse_m.RelationCache] = []

    class Recorded(reuse_m.RelationCache):
        def __init__(self) -> None:
            super().__init__()
            caches.append(self)

    mp = pytest.MonkeyPatch()
    request.addfinalizer(mp.undo)
    mp.setattr(reuse_m, "RelationCache", Recorded)
    # kept: the real watch loop and its cache, one file per batch
    scene.land_file(0)
    stop, lis = threading.Event(), Lander(scene)
    safety = threading.Timer(300, stop.set)
    safety.start()
    try:
        out = watch_m.watch(scene.load, listener=lis, stop=stop, interval=60, max_batches=FILES)
    finally:
        safety.cancel()
    assert out.reason == "max_batches", out
    kept = scene.keep_outputs("kept")
    # fresh: the same files, same reference states, every relation built
    scene.restore_references()
    fresh_results = []
    for i in range(FILES):
        if i == CHANGE_BEFORE:
            scene.change_references()
        only = Incremental(only=[str(scene.path(i))])
        fresh_results.append(run_contract(scene.load(), incremental=only))
    fresh = scene.keep_outputs("fresh")
    return {
        "scene": scene,
        "kept": kept,
        "fresh": fresh,
        "kept_results": lis.results,
        "fresh_results": fresh_results,
        "caches": caches,
    }


def _columns(con: duckdb.DuckDBPyConnection, db: str, table: str) -> list[str]:
    rows = con.execute(
        "SELECT column_name FROM information_schema.columns "
        "WHERE table_catalog = ? AND table_name = ? ORDER BY ordinal_position",
        [db, table],
    ).fetchall()
    return [r[0] for r in rows if r[0] not in WHEN]


def test_the_watch_reused_every_unchanged_relation_and_rebuilt_the_changed(passes: dict):
    (cache,) = passes["caches"]
    # batch 1 builds 3 references + dim_customer; 2 restores all four; 3 rebuilds products,
    # customers_cdc and the dimension (stores restored); 4 restores all four
    assert (cache.built, cache.reused) == (4 + 3, 4 + 1 + 4)
    # the published dim_customer was replaced by batches 1 (unmarked) and 3 (a new build)
    # and left in place by 2 and 4, which carried the mark of the build they restored
    assert cache.kept_published == 2


def test_a_published_dimension_carries_the_mark_of_its_build(passes: dict):
    """The kept warehouse's dim_customer is marked with the last build's digest; a batch
    run's (the fresh pass has no cache) carries none, so a watch after it replaces it."""
    (cache,) = passes["caches"]
    marks = {}
    for tag in ("kept", "fresh"):
        con = duckdb.connect(str(passes[tag]), read_only=True)
        marks[tag] = con.execute(
            "SELECT comment FROM duckdb_tables() WHERE table_name = 'dim_customer'"
        ).fetchone()[0]
        con.close()
    assert marks["kept"] == cache.dimension_mark("_sg_dim_dim_customer")
    assert marks["kept"].startswith("sluicegate dimension build ")
    assert marks["fresh"] is None


def test_kept_relations_publish_exactly_what_fresh_runs_publish(passes: dict):
    kept, fresh = passes["kept_results"], passes["fresh_results"]
    assert [r.status for r in kept] == [r.status for r in fresh]
    for a, b in zip(kept, fresh, strict=True):
        assert a.metrics["run_id"] == b.metrics["run_id"]
        for key in ("ledger", "gate", "rules", "model", "clean_published", "drift"):
            assert a.metrics[key] == b.metrics[key], key
    con = duckdb.connect()
    con.execute(f"ATTACH '{passes['kept']}' AS k (READ_ONLY)")
    con.execute(f"ATTACH '{passes['fresh']}' AS f (READ_ONLY)")
    for table in TABLES:
        cols = _columns(con, "k", table)
        assert cols == _columns(con, "f", table), table
        sel = ", ".join(f'"{c}"' for c in cols)
        for x, y in (("k", "f"), ("f", "k")):
            diff = con.execute(
                f"SELECT count(*) FROM (SELECT {sel} FROM {x}.{table} "
                f"EXCEPT ALL SELECT {sel} FROM {y}.{table})"
            ).fetchone()[0]
            assert diff == 0, f"{table}: {diff} rows of {x} not in {y}"
        assert con.execute(f"SELECT count(*) FROM k.{table}").fetchone()[0] > 0, table


def test_a_reference_changed_between_batches_is_read_again(passes: dict):
    scene: Scene = passes["scene"]
    con = duckdb.connect(str(passes["kept"]), read_only=True)
    runs = [r.metrics["run_id"] for r in passes["kept_results"]]
    p = scene.product
    for i, rid in enumerate(runs):
        # every line of the file is published exactly once, counted from the file itself
        published = sum(
            con.execute(f"SELECT count(*) FROM {t} WHERE _run_id = ?", [rid]).fetchone()[0]
            for t in ("sales_clean", "sales_dlq", "sales_duplicates")
        )
        assert published == sum(1 for line in scene.chunks[i] if line.strip())
        clean = con.execute(
            "SELECT count(*) FROM sales_clean WHERE _run_id = ? AND product_id = ?", [rid, p]
        ).fetchone()[0]
        unknown = con.execute(
            "SELECT count(*) FROM sales_dlq WHERE _run_id = ? AND product_id = ? "
            "AND list_contains(list_transform(_failed_rules, lambda r: r.name), 'known_product')",
            [rid, p],
        ).fetchone()[0]
        if i < CHANGE_BEFORE:
            assert unknown == 0, (i, p)
        else:  # the rewritten products.json (same size and mtime) was typed again
            assert clean == 0 and unknown >= 1, (i, p, clean, unknown)
    assert any(
        con.execute(
            "SELECT count(*) FROM sales_clean WHERE _run_id = ? AND product_id = ?", [rid, p]
        ).fetchone()[0]
        for rid in runs[:CHANGE_BEFORE]
    ), "the product was clean before the change"
    dims = [
        r.metrics["model"]["dimensions"]["dim_customer"]["rows"] for r in passes["kept_results"]
    ]
    assert dims[CHANGE_BEFORE] == dims[CHANGE_BEFORE - 1] + 1  # the appended change
    assert dims[-1] == dims[CHANGE_BEFORE]


def test_a_snapshot_restores_every_column_type_or_refuses():
    """Arrow has no JSON type (DuckDB hands it out as text): the restore casts each column
    back to the type it had, and a table whose types would differ is never created."""
    from sluicegate.engines.duckdb_engine import DuckDBEngine

    eng = DuckDBEngine(":memory:")
    try:
        eng.execute(
            "CREATE TEMP TABLE t AS SELECT 1::INTEGER a, '{\"k\": 1}'::JSON j, [1, 2] l, "
            "TIMESTAMP '2020-01-01 10:00:00' ts, 1.5::DECIMAL(10,2) d, {'k': 1} s, "
            "TIMESTAMPTZ '2020-01-01 00:00:00+00' tz, uuid() u, 1::HUGEINT h, "
            "INTERVAL 1 DAY i, MAP {'a': 1} m, 'x'::BLOB b"
        )
        before = eng.fetch("SELECT * FROM t")
        snap = eng.snapshot_table("t")
        eng.drop_table("t")
        eng.restore_table("t", snap)
        assert eng.columns("t") == snap[0]
        assert eng.fetch("SELECT * FROM t") == before
        eng.execute("DROP VIEW t")
        columns, rows = snap
        with pytest.raises(ValueError):  # a type that cannot be spelled back: rebuilt instead
            eng.restore_table("t", ([*columns[:-1], ("b", "NOT A TYPE(")], rows))
        assert not eng.table_exists("t")
    finally:
        eng.close()
