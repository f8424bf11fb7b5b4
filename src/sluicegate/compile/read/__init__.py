"""Readers: loaded records → the typed relation, one module per format and dialect.

``relation``       the shared text → typed relation (casts, flags, ``_raw``, rescue)
``ndjson_duckdb``  NDJSON on DuckDB       ``ndjson_spark``  NDJSON on Spark
``csv_text``       CSV, shared            ``csv_duckdb`` / ``csv_spark``  its list functions
``parquet``        Parquet rows (both dialects; the JSON pieces come in as a dialect)
``duckdb_json`` / ``spark_json``  the JSON functions a dialect spells differently
``table``          READERS[(format, dialect)] and ``typed_select`` — the one dispatcher,
                   which no reader imports
"""
