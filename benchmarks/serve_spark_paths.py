"""How Spark should serve: its JDBC writer (``org.postgresql:postgresql`` from Maven, in
.jars/spark) vs collecting Arrow batches (``DataFrame.toArrow``) into sluicegate's ADBC
loader — the measurement behind engines/spark_engine.py's ``arrow_batches``.

The same fact-shaped DataFrame (``--rows``, default 986k) is written to a fresh table on a
throwaway PostgreSQL 15 (tests/servers/postgres.py) both ways, on ``local[2]``; each is
timed from the cached DataFrame to rows visible, median of ``--runs``.

Usage::

    make jars && .venv/bin/python benchmarks/serve_spark_paths.py --rows 986000 --runs 3
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

FACT = """
SELECT concat('s', id) AS sale_id,
       timestamp_seconds(1704067200 + id) AS order_ts,
       concat('c', id % 50000) AS customer_id, concat('p', id % 800) AS product_id,
       concat('st', id % 40) AS store_id, 'web' AS channel,
       CAST(id % 9 + 1 AS INT) AS quantity, CAST((id % 10000) / 100 AS DECIMAL(10,2)) AS unit_price,
       CAST((id % 9 + 1) * (id % 10000) / 100 AS DECIMAL(38,2)) AS amount,
       'gold' AS segment, id % 5 AS dim_customer_version, id % 97 = 0 AS dim_customer_unknown,
       'part-000.json' AS _source_file, id AS _source_line, DATE'2024-12-31' AS _logical_date
FROM range({rows})
"""
DDL = (
    "CREATE TABLE {name} (sale_id text, order_ts timestamp, customer_id text, product_id text, "
    "store_id text, channel text, quantity integer, unit_price numeric(10,2), "
    "amount numeric(38,2), segment text, dim_customer_version bigint, "
    "dim_customer_unknown boolean, _source_file text, _source_line bigint, _logical_date date)"
)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--rows", type=int, default=986_000)
    ap.add_argument("--runs", type=int, default=3)
    args = ap.parse_args()
    from pyspark.sql import SparkSession
    from tests.servers.postgres import PostgresServer

    from sluicegate.engines.postgres import PostgresTarget

    jar = next((REPO / ".jars" / "spark").glob("postgresql-*.jar"), None)
    if jar is None:
        raise SystemExit("no PostgreSQL JDBC driver in .jars/spark: run `make jars`")
    spark = (
        SparkSession.builder.master("local[2]")
        .config("spark.jars", str(jar))
        .config("spark.sql.session.timeZone", "UTC")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "2")
        .config("spark.sql.execution.arrow.pyspark.enabled", "true")
        .getOrCreate()
    )
    df = spark.sql(FACT.format(rows=args.rows)).cache()
    df.count()
    import pyarrow as pa

    with PostgresServer() as pg:
        url = f"postgresql://{pg.user}@{pg.host}:{pg.port}/postgres"
        jdbc = f"jdbc:postgresql://{pg.host}:{pg.port}/postgres"
        props = {"user": pg.user, "password": pg.password, "driver": "org.postgresql.Driver"}
        times: dict[str, list[float]] = {"Spark JDBC writer": [], "toArrow + ADBC ingest": []}
        for i in range(args.runs):
            name = f"jdbc_{i}"
            pg.psql(DDL.format(name=name))
            t = time.perf_counter()
            df.write.option("batchsize", 10_000).jdbc(jdbc, name, mode="append", properties=props)
            times["Spark JDBC writer"].append(time.perf_counter() - t)
            assert int(pg.psql(f"SELECT count(*) FROM {name}")) == args.rows

            name = f"arrow_{i}"
            pg.psql(DDL.format(name=name))
            t = time.perf_counter()
            table = df.toArrow()
            target = PostgresTarget(url, password=pg.password, label="bench")
            try:
                reader = pa.RecordBatchReader.from_batches(
                    table.schema, table.to_batches(max_chunksize=122_880)
                )
                target.cur.adbc_ingest(name, reader, mode="append")
                target.commit()
            finally:
                target.close()
            times["toArrow + ADBC ingest"].append(time.perf_counter() - t)
            assert int(pg.psql(f"SELECT count(*) FROM {name}")) == args.rows
        for label, ts in times.items():
            med = statistics.median(ts)
            print(
                f"{label:22s} {args.rows:>9,} rows  median {med:6.2f} s  "
                f"({args.rows / med:,.0f} rows/s)  runs: {', '.join(f'{t:.2f}' for t in ts)}"
            )
    spark.stop()


if __name__ == "__main__":
    main()
