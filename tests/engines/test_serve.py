"""Serving into a real PostgreSQL 15 (tests/servers/postgres.py) after a DuckDB run.

The retail feed's star schema, a mart, the quality facts and the DLQ summary are served;
PostgreSQL is read back with its own ``psql`` (a reader sluicegate did not write) and
reconciled with the warehouse and the generator's truth. Then: a rerun rewrites no row
(``xmin`` of every row unchanged), a second date adds only its rows, a type clash is a
clear error with nothing loaded, and the faults — wrong password, server down, the
server SIGKILLed mid-load, the client SIGKILLed mid-load, a full disk — leave the
warehouse and the verdict alone, fail the ``serve:app_db`` fact, and the next serve loads
what was missed exactly once.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import time
from pathlib import Path

import duckdb
import pytest

from sluicegate.compile.contract_check import load_contract
from sluicegate.datagen.retail import generate
from sluicegate.run.pipeline import run_contract
from tests.cli.test_cli_json_shapes import valid
from tests.conftest import run_cli
from tests.engines.test_model_retail import CONTRACT
from tests.servers.postgres import PostgresServer, free_port

pytestmark = [pytest.mark.duckdb, pytest.mark.slow]  # a real PostgreSQL; ~1-5 min in all

DAY, DAY2 = "2024-12-31", "2025-01-01"
TABLES = ["dim_customer", "fct_sales", "mart_monthly_revenue", "quality_facts", "dlq_summary"]
SERVE = """
serve:
  - name: app_db
    url: ${pg_url}
    password: ${secret:app_db/password}
    schema: serving
    tables: [dim_customer, fct_sales, mart_monthly_revenue, quality_facts, dlq_summary]
"""
SECRET_ENV = "SLUICEGATE_SECRET_APP_DB_PASSWORD"


@pytest.fixture(scope="module")
def feed(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict]:
    data = tmp_path_factory.mktemp("retail") / "data"
    return data, generate(data, lines=3000, seed=3)


def pg_url(pg: PostgresServer, db: str) -> str:
    """The target URL as a contract writes it: no password (that comes from a secret)."""
    return f"postgresql://{pg.user}@{pg.host}:{pg.port}/{db}"


def project(tmp_path: Path, name: str = "p") -> Path:
    root = tmp_path / name
    root.mkdir()
    (root / "contract.yml").write_text(
        textwrap.dedent(CONTRACT).lstrip() + textwrap.dedent(SERVE), encoding="utf-8"
    )
    return root


def run(root: Path, data: Path, url: str, day: str = DAY):
    loaded = load_contract(
        root / "contract.yml", variables={"root": str(data), "pg_url": url}, logical_date=day
    )
    return run_contract(loaded)


def cli(root: Path, *args: str, password: str, env: dict | None = None):
    return run_cli(*args, cwd=root, env={SECRET_ENV: password, **(env or {})})


def serve_fact(result) -> dict:
    (f,) = [f for f in result.metrics["facts"] if f["check_id"] == "serve:app_db"]
    return f


def rows(pg: PostgresServer, db: str, sql: str) -> list[str]:
    out = pg.psql(sql, db).strip()
    return sorted(out.splitlines()) if out else []


def count(pg: PostgresServer, db: str, table: str) -> int:
    return int(pg.psql(f"SELECT count(*) FROM serving.{table}", db))


def tables_in(pg: PostgresServer, db: str) -> set[str]:
    return set(rows(pg, db, "SELECT tablename FROM pg_tables WHERE schemaname = 'serving'"))


def xmins(pg: PostgresServer, db: str) -> dict[str, list[str]]:
    """Every served row's physical identity and creating transaction."""
    return {
        t: rows(pg, db, f"SELECT ctid::text || ' ' || xmin::text FROM serving.{t}") for t in TABLES
    }


def warehouse_counts(root: Path) -> dict[str, int]:
    con = duckdb.connect(str(root / "wh.duckdb"), read_only=True)
    try:
        out = {t: con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in TABLES[:3]}
        out["quality_facts"] = con.execute(
            "SELECT count(*) FROM quality_facts WHERE check_id NOT LIKE 'serve:%'"
        ).fetchone()[0]
        out["dlq_summary"] = con.execute(
            "SELECT count(*) FROM (SELECT DISTINCT _dlq_source_table, _reason, _dlq_status "
            "FROM sales_dlq)"
        ).fetchone()[0]
        return out
    finally:
        con.close()


def served_counts(pg: PostgresServer, db: str) -> dict[str, int]:
    return {t: count(pg, db, t) for t in TABLES}


@pytest.fixture
def db(pg_server: PostgresServer, request: pytest.FixtureRequest, monkeypatch) -> str:
    name = "t_" + request.node.name.lower()[:50].replace("[", "_").replace("]", "")
    pg_server.create_database(name)
    monkeypatch.setenv(SECRET_ENV, pg_server.password)
    return name


# -- loads ------------------------------------------------------------------------------------


def test_serve_reconciles_with_warehouse_and_truth(tmp_path: Path, feed, pg_server, db):
    data, truth = feed
    root = project(tmp_path)
    result = run(root, data, pg_url(pg_server, db))
    assert result.exit_code == 0 and result.status in ("pass", "warn")
    fact = serve_fact(result)
    assert fact["status"] == "pass" and fact["severity"] == "warning", fact
    assert served_counts(pg_server, db) == warehouse_counts(root)
    assert count(pg_server, db, "fct_sales") == truth["fact_rows"]
    assert count(pg_server, db, "dim_customer") == truth["customer_dim_rows"]
    cs = truth["fact_checksum"]
    q, amount, ver = (
        pg_server.psql(
            "SELECT sum(quantity), sum(amount), sum(dim_customer_version) FROM serving.fct_sales",
            db,
        )
        .strip()
        .split("|")
    )
    assert (int(q), amount, int(ver)) == (
        cs["sum_quantity"],
        f"{float(cs['sum_amount']):.2f}",
        cs["sum_customer_version"],
    )
    # the dimension row for row, against the warehouse
    con = duckdb.connect(str(root / "wh.duckdb"), read_only=True)
    want = sorted(
        "|".join(
            "" if v is None else ("t" if v is True else "f" if v is False else str(v)) for v in r
        )
        for r in con.execute(
            "SELECT customer_id, version, segment, region, valid_from, valid_to, is_current "
            "FROM dim_customer"
        ).fetchall()
    )
    con.close()
    got = rows(
        pg_server,
        db,
        "SELECT customer_id, version, segment, region, valid_from, valid_to, is_current "
        "FROM serving.dim_customer",
    )
    assert got == want
    # types mapped from the contract; keys as primary keys
    cols = dict(
        line.split("|")
        for line in rows(
            pg_server,
            db,
            "SELECT column_name, data_type FROM information_schema.columns "
            "WHERE table_schema = 'serving' AND table_name = 'fct_sales'",
        )
    )
    assert cols["unit_price"] == "numeric" and cols["quantity"] == "integer"
    assert cols["order_ts"] == "timestamp without time zone" and cols["_logical_date"] == "date"
    pk = rows(
        pg_server,
        db,
        "SELECT a.attname FROM pg_index i JOIN pg_attribute a ON a.attrelid = i.indrelid "
        "AND a.attnum = ANY(i.indkey) WHERE i.indrelid = 'serving.dim_customer'::regclass "
        "AND i.indisprimary",
    )
    assert pk == ["customer_id", "version"]
    # the fact recorded in the warehouse, under the run
    con = duckdb.connect(str(root / "wh.duckdb"), read_only=True)
    (status,) = con.execute(
        "SELECT status FROM quality_facts WHERE check_id = 'serve:app_db' AND run_id = ?",
        [result.metrics["run_id"]],
    ).fetchone()
    con.close()
    assert status == "pass"


def test_rerun_rewrites_no_row_and_a_second_date_adds_only_its_own(
    tmp_path: Path, feed, pg_server, db
):
    data, _ = feed
    root = project(tmp_path)
    url = pg_url(pg_server, db)
    first = run(root, data, url)
    before = xmins(pg_server, db)
    assert all(before[t] for t in TABLES)
    again = run(root, data, url)
    assert again.metrics["run_id"] == first.metrics["run_id"]
    assert again.status == first.status
    assert xmins(pg_server, db) == before  # not one row rewritten, moved or added
    loads = again.metrics["serve"][0]["tables"]
    assert sum(t["written"] + t["deleted"] for t in loads) == 0, loads

    fct_day1 = rows(
        pg_server,
        db,
        f"SELECT ctid::text || xmin::text FROM serving.fct_sales WHERE _logical_date = '{DAY}'",
    )
    second = run(root, data, url, day=DAY2)
    assert serve_fact(second)["status"] == "pass"
    (fct,) = [t for t in second.metrics["serve"][0]["tables"] if t["table"] == "fct_sales"]
    assert fct["scope"] == [DAY2]  # only the new date was copied
    after = rows(
        pg_server,
        db,
        f"SELECT ctid::text || xmin::text FROM serving.fct_sales WHERE _logical_date = '{DAY}'",
    )
    assert after == fct_day1
    assert served_counts(pg_server, db) == warehouse_counts(root)
    ledger = rows(pg_server, db, "SELECT table_name, scope_value FROM serving._sluicegate_served")
    assert ledger == [f"fct_sales|{DAY}", f"fct_sales|{DAY2}"]


def test_type_clash_is_one_clear_error_and_nothing_is_loaded(tmp_path: Path, feed, pg_server, db):
    data, _ = feed
    pg_server.psql(
        "CREATE SCHEMA serving; CREATE TABLE serving.dim_customer (customer_id text, "
        "segment integer)",
        db,
    )
    root = project(tmp_path)
    result = run(root, data, pg_url(pg_server, db))
    assert result.exit_code == 0  # the gate's verdict, not the serve's
    fact = serve_fact(result)
    assert fact["status"] == "fail" and fact["diagnostic"] == "SERVE_FAILED"
    assert "serving.dim_customer does not match" in fact["detail"]
    assert "column segment is integer, the load needs text" in fact["detail"]
    assert tables_in(pg_server, db) == {"dim_customer"}  # the whole target rolled back


# -- faults -----------------------------------------------------------------------------------


def test_wrong_password_fails_the_fact_never_prints_it_and_serve_loads_later(
    tmp_path: Path, feed, pg_server, db
):
    data, _ = feed
    root = project(tmp_path)
    url = pg_url(pg_server, db)
    wrong = "Wr0ng-s3cret-xyzzy"
    args = ("--var", f"root={data}", "--var", f"pg_url={url}", "--logical-date", DAY)
    r = cli(root, "run", "contract.yml", *args, "--json", password=wrong)
    assert r.returncode == 0, r.stderr  # the gate passed: a failed serve changes nothing
    metrics = json.loads(r.stdout)
    fact = [f for f in metrics["facts"] if f["check_id"] == "serve:app_db"][0]
    assert fact["status"] == "fail", fact
    assert "password authentication failed" in fact["detail"]
    assert "serve:app_db FAILED (the run's verdict stands)" in r.stderr  # shown even with --json
    leaked = [wrong in text for text in (r.stdout, r.stderr)]
    for p in root.rglob("*"):
        if p.is_file() and p.suffix in (".json", ".log", ""):
            leaked.append(wrong in p.read_text(errors="replace"))
    assert not any(leaked)
    assert tables_in(pg_server, db) == set()

    s = cli(root, "serve", "contract.yml", "--var", f"root={data}", "--var", f"pg_url={url}",
            password=pg_server.password)  # fmt: skip
    assert s.returncode == 0, s.stderr
    assert "serve:app_db PASS" in s.stdout
    assert served_counts(pg_server, db) == warehouse_counts(root)
    before = xmins(pg_server, db)
    s = cli(root, "serve", "contract.yml", "--var", f"root={data}", "--var", f"pg_url={url}",
            "--json", password=pg_server.password)  # fmt: skip
    assert s.returncode == 0
    doc = valid(json.loads(s.stdout), "serve")  # the shape docs/cli.md documents
    assert sum(t["written"] + t["deleted"] for t in doc["targets"][0]["tables"]) == 0
    assert xmins(pg_server, db) == before


def test_server_down_then_serve_loads_the_missed_run_once(tmp_path: Path, feed, pg_server, db):
    data, _ = feed
    root = project(tmp_path)
    down = f"postgresql://{pg_server.user}@127.0.0.1:{free_port()}/{db}"
    t = time.perf_counter()
    result = run(root, data, down)
    assert result.exit_code == 0
    fact = serve_fact(result)
    assert fact["status"] == "fail" and "Connection refused" in fact["detail"], fact
    assert result.metrics["timings"]["serve"] < 30, time.perf_counter() - t
    wh_before = (root / "wh.duckdb").stat().st_size
    url = pg_url(pg_server, db)
    s = cli(root, "serve", "contract.yml", "--var", f"root={data}", "--var", f"pg_url={url}",
            "--run", result.metrics["run_id"], password=pg_server.password)  # fmt: skip
    assert s.returncode == 0, s.stderr
    assert served_counts(pg_server, db) == warehouse_counts(root)
    assert wh_before > 0
    # the serve recorded its own fact under the run it served
    con = duckdb.connect(str(root / "wh.duckdb"), read_only=True)
    (status,) = con.execute(
        "SELECT status FROM quality_facts WHERE check_id = 'serve:app_db' AND run_id = ?",
        [result.metrics["run_id"]],
    ).fetchone()
    con.close()
    assert status == "pass"


def test_serve_cli_usage_errors(tmp_path: Path, feed, pg_server, db):
    data, _ = feed
    root = project(tmp_path)
    url = pg_url(pg_server, db)
    v = ("--var", f"root={data}", "--var", f"pg_url={url}")
    r = cli(root, "serve", "contract.yml", *v, password=pg_server.password)
    assert r.returncode == 2 and "no warehouse" in r.stderr  # nothing ran yet
    run(root, data, url)
    r = cli(root, "serve", "contract.yml", *v, "--target", "app_bd", password=pg_server.password)
    assert r.returncode == 2 and "did you mean 'app_db'" in r.stderr, r.stderr
    r = cli(root, "serve", "contract.yml", *v, "--run", "nope", password=pg_server.password)
    assert r.returncode == 2 and "no published run 'nope'" in r.stderr, r.stderr


@pytest.fixture
def own_server():
    """A server of the test's own: it is killed or starved."""
    with PostgresServer() as server:
        yield server


def _paused_run(root: Path, data: Path, url: str, day: str, password: str, point: str):
    marker = root / "paused"
    env = {
        SECRET_ENV: password,
        "SLUICEGATE_PAUSE": f"{point}:6",
        "SLUICEGATE_PAUSE_FILE": str(marker),
    }
    cmd = [
        sys.executable, "-m", "sluicegate.cli.main", "run", "contract.yml", "--json",
        "--var", f"root={data}", "--var", f"pg_url={url}", "--logical-date", day,
    ]  # fmt: skip
    proc = subprocess.Popen(
        cmd, cwd=root, env={**os.environ, **env}, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    return proc, marker


def test_server_killed_mid_load_loses_and_doubles_nothing(
    tmp_path: Path, feed, own_server, monkeypatch
):
    data, _ = feed
    pg = own_server
    monkeypatch.setenv(SECRET_ENV, pg.password)
    pg.create_database("app")
    url = pg_url(pg, "app")
    root = project(tmp_path)
    assert serve_fact(run(root, data, url))["status"] == "pass"  # day 1 served
    day1 = xmins(pg, "app")

    proc, marker = _paused_run(root, data, url, DAY2, pg.password, "serve:copied:fct_sales")
    deadline = time.monotonic() + 300
    while not marker.exists() and proc.poll() is None and time.monotonic() < deadline:
        time.sleep(0.1)
    assert marker.exists(), proc.communicate()
    pg.kill()  # SIGKILL mid-load: day 2's fact rows are in the stage, not committed
    pg.start()
    out, err = proc.communicate(timeout=300)
    assert proc.returncode == 0, err  # the gate's verdict
    fact = [f for f in json.loads(out)["facts"] if f["check_id"] == "serve:app_db"][0]
    assert fact["status"] == "fail", fact
    assert xmins(pg, "app") == day1  # day 1 intact, nothing of day 2 visible
    assert rows(pg, "app", "SELECT scope_value FROM serving._sluicegate_served") == [DAY]

    s = cli(root, "serve", "contract.yml", "--var", f"root={data}", "--var", f"pg_url={url}",
            password=pg.password)  # fmt: skip
    assert s.returncode == 0, s.stderr
    assert served_counts(pg, "app") == warehouse_counts(root)
    dup = pg.psql(
        "SELECT count(*) FROM (SELECT sale_id, _logical_date FROM serving.fct_sales "
        "GROUP BY 1, 2 HAVING count(*) > 1) d",
        "app",
    )
    assert int(dup) == 0


def test_client_killed_mid_load_then_next_run_loads_once(tmp_path: Path, feed, pg_server, db):
    data, _ = feed
    root = project(tmp_path)
    url = pg_url(pg_server, db)
    args = ("--var", f"root={data}", "--var", f"pg_url={url}", "--logical-date", DAY)
    r = cli(root, "run", "contract.yml", *args, password=pg_server.password,
            env={"SLUICEGATE_FAULT": "serve:copied:fct_sales"})  # fmt: skip
    assert r.returncode == -9  # SIGKILLed after the publish, inside the serve transaction
    deadline = time.monotonic() + 30  # the server notices the dead client and rolls back
    while time.monotonic() < deadline and int(
        pg_server.psql(f"SELECT count(*) FROM pg_stat_activity WHERE datname = '{db}'")
    ):
        time.sleep(0.2)
    assert tables_in(pg_server, db) == set()
    result = run(root, data, url)  # the next run (a rerun of the published date) loads it
    assert serve_fact(result)["status"] == "pass"
    assert served_counts(pg_server, db) == warehouse_counts(root)


def test_disk_full_rolls_the_target_back(tmp_path: Path, monkeypatch):
    """A server whose files may not grow past 2 MB: the fact's stage cannot be written
    ("could not extend file … File too large", what a full disk does to a COPY)."""
    data = tmp_path / "data"
    generate(data, lines=12_000, seed=5)
    with PostgresServer(file_size_limit=2 << 20) as pg:
        monkeypatch.setenv(SECRET_ENV, pg.password)
        pg.create_database("app")
        root = project(tmp_path)
        result = run(root, data, pg_url(pg, "app"))
        assert result.exit_code == 0
        fact = serve_fact(result)
        assert fact["status"] == "fail" and "File too large" in fact["detail"], fact
        assert tables_in(pg, "app") == set()
