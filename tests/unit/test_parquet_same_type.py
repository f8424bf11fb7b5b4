"""Which physical Parquet types the reader takes as already typed (compile/read/parquet.py).

A wrong "same" would let a value skip its cast: a BIGINT in an INTEGER column, a
TIMESTAMP WITH TIME ZONE in a TIMESTAMP column (not converted to UTC), a wider DECIMAL
(not rounded to the declared scale).
"""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from sluicegate.compile.read.parquet import same_type
from sluicegate.contract.coltypes import parse_type

CASES = [
    ("duckdb", "INTEGER", "INTEGER", True),
    ("duckdb", "TIMESTAMP", "TIMESTAMP", True),
    ("duckdb", "DECIMAL(10,2)", "DECIMAL(10,2)", True),
    ("duckdb", "DATE", "DATE", True),
    ("duckdb", "DOUBLE", "DOUBLE", True),
    ("duckdb", "VARCHAR", "VARCHAR", True),
    ("duckdb", "BOOLEAN", "BOOLEAN", True),
    ("duckdb", "BIGINT", "INTEGER", False),
    ("duckdb", "UINTEGER", "INTEGER", False),
    ("duckdb", "DECIMAL(18,3)", "DECIMAL(10,2)", False),
    ("duckdb", "TIMESTAMP WITH TIME ZONE", "TIMESTAMP", False),
    ("duckdb", "TIMESTAMP_NS", "TIMESTAMP", False),
    ("duckdb", "FLOAT", "DOUBLE", False),
    ("duckdb", "STRUCT(a INTEGER)", "INTEGER", False),
    ("duckdb", "no such type ((", "INTEGER", False),
    ("spark", "int", "INTEGER", True),
    ("spark", "decimal(10,2)", "DECIMAL(10,2)", True),
    ("spark", "timestamp_ntz", "TIMESTAMP", False),
]


@pytest.mark.parametrize(("dialect", "physical", "declared", "same"), CASES)
def test_same_type(dialect, physical, declared, same):
    spec = SimpleNamespace(parsed=parse_type(declared))
    assert same_type(physical, spec, dialect) is same
