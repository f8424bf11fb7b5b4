"""A Flink runner for the seed-helper tests: JSON files in, tuples out.

Test code only; it never imports PyFlink itself (the TableEnvironment is
handed in by the ``t_env`` fixture).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Sequence
from pathlib import Path

FLINK_TYPES = {"int": "INT", "bigint": "BIGINT", "string": "STRING"}


def quoted(name: str) -> str:
    """Backtick-quote each part of a (possibly qualified) test table name."""
    return ".".join(f"`{part}`" for part in name.split("."))


class FlinkRunner:
    """Runs the seed pipeline on a batch TableEnvironment.

    Source tables are newline-delimited JSON files read through Flink's
    bundled filesystem connector, as a production batch job would read them.
    """

    def __init__(self, t_env, root: Path) -> None:
        self.t_env = t_env
        self.root = root

    def load(self, name: str, schema: Sequence[tuple[str, str]], rows: Iterable[tuple]) -> None:
        folder = self.root / re.sub(r"\W", "_", name)
        folder.mkdir(parents=True, exist_ok=True)
        columns = [col for col, _ in schema]
        with open(folder / "part-0.json", "w", encoding="utf-8") as out:
            for row in rows:
                out.write(json.dumps(dict(zip(columns, row, strict=True))) + "\n")
        cols = ", ".join(f"`{col}` {FLINK_TYPES[typ]}" for col, typ in schema)
        self.t_env.execute_sql(f"DROP TEMPORARY TABLE IF EXISTS {quoted(name)}")
        self.t_env.execute_sql(
            f"CREATE TEMPORARY TABLE {quoted(name)} ({cols}) WITH ("
            f"'connector' = 'filesystem', 'path' = '{folder.as_uri()}', 'format' = 'json')"
        )

    def create_view(self, name: str, sql: str) -> None:
        self.t_env.execute_sql(f"DROP TEMPORARY VIEW IF EXISTS {quoted(name)}")
        self.t_env.execute_sql(f"CREATE TEMPORARY VIEW {quoted(name)} AS {sql}")

    def query(self, sql: str) -> list[tuple]:
        with self.t_env.execute_sql(sql).collect() as results:
            return [tuple(row) for row in results]
