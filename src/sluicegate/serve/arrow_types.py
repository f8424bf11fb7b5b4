"""The SQL type of an Arrow column: what a served column is created as when the contract
does not declare it (a mart's aggregates, a fact's derived columns)."""

from __future__ import annotations

import pyarrow as pa


def sql_type_of(t: pa.DataType) -> str:
    """DuckDB-style SQL type text for an Arrow type (then mapped by ``serve_sql.pg_type``).

    Decimals the engine computed become ``DECIMAL(38, s)`` and integers ``BIGINT``: DuckDB
    and Spark size an aggregate differently (``sum`` of ``DECIMAL(10,2)`` is ``(38,2)`` on
    one and ``(20,2)`` on the other), and one served table must accept either engine.
    """
    if pa.types.is_integer(t):
        return "BIGINT"
    if pa.types.is_decimal(t):
        return f"DECIMAL(38, {t.scale})"
    if pa.types.is_floating(t):
        return "DOUBLE" if t.bit_width == 64 else "FLOAT"
    if pa.types.is_string(t) or pa.types.is_large_string(t) or pa.types.is_string_view(t):
        return "VARCHAR"
    if pa.types.is_boolean(t):
        return "BOOLEAN"
    if pa.types.is_date(t):
        return "DATE"
    if pa.types.is_timestamp(t):
        return "TIMESTAMP"
    raise ValueError(f"Arrow type {t} cannot be served (no PostgreSQL mapping)")


_PG_ARROW = {
    "bigint": pa.int64(),
    "integer": pa.int32(),
    "smallint": pa.int16(),
    "double precision": pa.float64(),
    "real": pa.float32(),
    "text": pa.string(),
    "character varying": pa.string(),
    "boolean": pa.bool_(),
    "date": pa.date32(),
    "timestamp without time zone": pa.timestamp("us"),
}


def arrow_type_of_pg(format_type: str) -> pa.DataType:
    """The Arrow type whose binary COPY a PostgreSQL column of ``format_type`` accepts."""
    if format_type.startswith("numeric("):
        p, s = format_type[len("numeric(") : -1].split(",")
        return pa.decimal128(int(p), int(s))
    if format_type not in _PG_ARROW:
        raise ValueError(f"PostgreSQL type {format_type} cannot be served into")
    return _PG_ARROW[format_type]


def conform(reader: pa.RecordBatchReader, types: dict[str, pa.DataType]) -> pa.RecordBatchReader:
    """Cast each batch to the served table's column types as it streams by.

    Binary COPY is strict (an int64 is not an ``integer``), and engines differ: Spark hands
    zoned timestamps (UTC wall time once the zone is dropped), DuckDB naive ones. A value
    that does not fit (a decimal too wide) fails the cast, and with it the load.
    """
    schema = pa.schema([pa.field(n, types[n]) for n in reader.schema.names])

    def batches():  # noqa: ANN202 - a generator of RecordBatch
        for batch in reader:
            cols = []
            for arr, field in zip(batch.columns, schema, strict=True):
                if pa.types.is_timestamp(arr.type) and arr.type.tz is not None:
                    arr = arr.cast(pa.timestamp(arr.type.unit, tz="UTC")).cast(
                        pa.timestamp(arr.type.unit)
                    )
                cols.append(arr if arr.type == field.type else arr.cast(field.type))
            yield pa.RecordBatch.from_arrays(cols, schema=schema)

    return pa.RecordBatchReader.from_batches(schema, batches())
