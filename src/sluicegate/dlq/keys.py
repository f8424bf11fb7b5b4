"""The DLQ surrogate key: ``xxhash64(source table name || canonical JSON)`` as a string.

Why this key: it is the MERGE key of the inbox, so it must be stable (a rerun of the
same input yields the same key: nothing in it depends on the run id or the clock) and
it must separate records (the canonical JSON includes the lineage ``_source_file``,
``_source_line`` and the ``_logical_date``, so two identical payloads on two lines — or
the same line read for two logical dates — get two keys; a content-only hash, seed 004's
design, collapses them and the counts stop reconciling).

xxhash64 with seed 42 over the UTF-8 bytes is Spark's built-in ``xxhash64(string)``;
DuckDB has none, so the DuckDB engine registers the vectorized UDF ``sg_xxhash64``
(``engines/duckdb_engine.py``) computing the same signed 64-bit value. The key is its
decimal text, e.g. ``-5600453489859368093``.
"""

from __future__ import annotations

from sqlglot import exp

from ..compile.render import lit

HASH_SEED = 42
HASH_FUNCTIONS = {"duckdb": "sg_xxhash64", "spark": "xxhash64"}


def hash64(text: exp.Expression, dialect: str) -> exp.Expression:
    """Signed 64-bit xxhash64 (seed 42) of ``text``'s UTF-8 bytes, on ``dialect``."""
    if dialect not in HASH_FUNCTIONS:
        raise ValueError(f"no xxhash64 function known for dialect '{dialect}'")
    return exp.Anonymous(this=HASH_FUNCTIONS[dialect], expressions=[text])


def key_document(source_table: str, row_json: exp.Expression) -> exp.Expression:
    """What is hashed: the source table name immediately followed by the row's JSON.

    The JSON starts with ``{`` and table names are identifiers, so the concatenation is
    unambiguous.
    """
    return exp.Concat(expressions=[lit(source_table), row_json])


def dlq_key(source_table: str, row_json: exp.Expression, dialect: str) -> exp.Expression:
    """``_dlq_sk``: the decimal text of the hash of :func:`key_document`."""
    return exp.cast(hash64(key_document(source_table, row_json), dialect), "VARCHAR")
