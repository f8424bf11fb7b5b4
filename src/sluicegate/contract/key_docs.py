"""One sentence for every key a contract may use, by model and field.

The JSON Schema (:mod:`sluicegate.contract.schema_export`) carries these as
``description`` so an editor shows them on hover and in completion; a test fails when a
model gains a field that has no sentence here, so a new key cannot ship undocumented.
They live apart from the pydantic models so the models stay about shape and validation.
"""

from __future__ import annotations

KEY_DOCS: dict[str, dict[str, str]] = {
    "Contract": {
        "name": "The feed's name ([a-z_][a-z0-9_]*): names the run metrics, the lock and the facts.",
        "owner": "Default owner (a team or an e-mail) of every rule and check that names none.",
        "vars": "Values for ${name} tokens in the contract; --var name=value on the command line wins.",
        "engine": "The engine a run uses: duckdb (default, embedded) or spark, or a mapping with options. The CLI's --engine wins.",
        "catalogs": "Iceberg SQL catalogs by name (type: sql, uri: sqlite:///file or postgresql://…, warehouse): read by source.format: iceberg and written by outputs.format: iceberg.",
        "source": "The feed a run reads: where the files are, their format and the declared columns.",
        "dedupe": "Drop repeated records: keep the first row per key by order_by, then by file and line.",
        "references": "Named lookup tables (same shape as source) for rules such as `col IN (SELECT key FROM name)` and for model dimensions.",
        "rules": "Ordered expectations: each row passes a rule only when its SQL expression is TRUE. List order is the priority of _reason.",
        "rules_file": "A YAML file of more rules (a list, or a mapping with rules:), appended after the rules here; relative to this file.",
        "gate": "Thresholds on the share of quarantined records that make a run warn or fail.",
        "outputs": "Where a run publishes: the warehouse and the names of its clean, quarantine, duplicates and facts tables.",
        "model": "Optional star schema built from the clean rows: SCD2 dimensions, facts with as-of joins, marts.",
        "serve": "PostgreSQL targets that receive the published tables after each run (docs/serving.md).",
        "alerts": "Notification targets (apprise URLs) and the run events each wants; never changes a run's verdict.",
        "lineage": "Where the run's OpenLineage events (START, then COMPLETE or FAIL) are POSTed.",
    },
    "EngineSection": {
        "name": "duckdb (embedded, the default) or spark.",
        "master": "Spark master URL: local[*], local[4], spark://host:7077.",
        "remote": "Spark Connect server URL: sc://host:15002.",
        "memory_limit": "DuckDB's buffer limit (default 800MB); beyond it DuckDB spills to <warehouse>.tmp.",
        "threads": "DuckDB threads (default: all cores).",
        "options": "Engine settings passed through as text (Spark configuration keys, for example).",
    },
    "TableSource": {
        "path": "A file, a folder (read recursively) or a glob (*, ?, [...], **); relative paths resolve against the contract's folder.",
        "format": "ndjson (default), csv or parquet; case-insensitive.",
        "columns": "Ordered map of declared columns, NAME: TYPE or NAME: {type, nullable, formats, finite}. The schema is declared, never inferred.",
        "csv": "CSV dialect: delimiter, quote, header. Only for format: csv.",
        "follow_symlinks": "false (default): symbolic links under the path are not read; true reads links that stay inside the folder.",
    },
    "Source": {
        "name": "Logical name of the source table (tags DLQ rows); default: the contract's name.",
        "freshness": "The newest value of a column must be younger than max_age, or the freshness check warns or fails.",
        "ready_when": "A marker file (such as _SUCCESS) relative to the source folder; while it is absent a run exits 4 and publishes nothing.",
        "expected_fingerprint": "The SHA-256 schema fingerprint governance expects; a contract whose columns give another fingerprint fails the schema check.",
        "partitions": "Hive folder names (month for month=2024-01) that become VARCHAR columns usable in rules, dedupe and partition_by.",
        "kafka": "For format: kafka: the brokers, topics and offsets a streaming source reads (docs/streaming.md).",
        "catalog": "For format: iceberg: the catalog (a key of catalogs:) holding the source table.",
        "table": "For format: iceberg: the source table as namespace.name.",
        "snapshot_id": "For format: iceberg: the snapshot a run reads (a rerun reads the same); default: the current one.",
        "as_of": "For format: iceberg: read the snapshot current at this ISO timestamp (instead of snapshot_id).",
    },
    "IcebergCatalog": {
        "type": "sql: an Iceberg SQL catalog in the standard JDBC-catalog layout (pyiceberg SqlCatalog, Spark JdbcCatalog).",
        "uri": "The catalog database: sqlite:///<file> (relative to the contract) or postgresql://user:password@host:port/db.",
        "warehouse": "Where the tables' files go: a folder (relative to the contract) or a URI.",
    },
    "KafkaSource": {
        "bootstrap_servers": "Comma-separated host:port list of Kafka brokers.",
        "topics": "The topics read; each message value is read like one NDJSON line.",
        "value_format": "How a message value is read: json (one JSON object, like an NDJSON line).",
        "starting_offsets": "Where partitions the offsets ledger has never seen start: earliest, latest, or {topic: {partition: offset}}.",
        "max_records_per_batch": "At most this many records per micro-batch (default 100000).",
        "on_offsets_lost": "fail (default): stop when retention deleted offsets not yet read; skip: carry on and record the gap as a fact.",
        "group_id": "Consumer group id (default sluicegate-<contract>); Kafka's committed offsets are only a monitoring hint.",
        "timeout_seconds": "How long a micro-batch waits for the brokers (default 30).",
        "security": "Client security: protocol, SASL mechanism and credentials, CA file.",
    },
    "KafkaSecurity": {
        "protocol": "PLAINTEXT (default), SSL, SASL_PLAINTEXT or SASL_SSL.",
        "sasl_mechanism": "PLAIN, SCRAM-SHA-256 or SCRAM-SHA-512 (SASL protocols only).",
        "username": "SASL user name.",
        "password": "SASL password: write ${secret:scope/key}, never the value.",
        "ca_location": "A PEM file of trusted certificate authorities (SSL, SASL_SSL).",
    },
    "ServeTarget": {
        "name": "Name of the target ([a-z_][a-z0-9_]*).",
        "url": "postgresql://user@host:port/database of the target.",
        "password": "The database password: write ${secret:scope/key}, never the value.",
        "schema": "PostgreSQL schema the tables are served into (default public).",
        "tables": "Published tables to serve: a name, or {table, as, key}.",
    },
    "ServeTable": {
        "table": "The published table (a model table, the facts table or dlq_summary).",
        "as": "Its name in PostgreSQL (default: the same).",
        "key": "The key upserts match on (one column or a list).",
    },
    "Alert": {
        "url": "An apprise URL: slack://, msteams://, mailto://, json://host/path for a webhook.",
        "on": "Events that notify: fail, warn, ledger_violation, stale, dlq_growth (default fail and ledger_violation).",
        "rate_limit": "At most one alert per contract, event and check within this window (90s, 30m, 1h, 2d; default 1h).",
        "dlq_growth_above": "dlq_growth fires when a run adds more than this many rows to the DLQ (default 0).",
    },
    "Lineage": {
        "url": "http(s) base URL of the OpenLineage receiver.",
        "endpoint": "Path of the lineage API under url (default api/v1/lineage).",
        "namespace": "OpenLineage namespace of the jobs and datasets (default sluicegate).",
        "timeout_seconds": "How long a POST may take (default 5, at most 120).",
    },
    "ColumnSpec": {
        "type": "Declared type, case-insensitive: BIGINT, INTEGER (INT), SMALLINT, TINYINT, DECIMAL(p,s), DOUBLE (FLOAT), VARCHAR (TEXT, STRING), BOOLEAN, DATE, TIMESTAMP (DATETIME).",
        "nullable": "false: a NULL value (absent, null, empty CSV field or not castable) quarantines the row as missing_required.",
        "formats": "DATE/TIMESTAMP only: strptime formats tried in order. Portable directives only: %Y %m %d %H %M %S %f %%.",
        "finite": "DOUBLE only: false accepts NaN and Infinity; by default they are a type_mismatch.",
    },
    "Freshness": {
        "column": "The DATE/TIMESTAMP column whose newest value is checked.",
        "max_age": "Largest accepted age of the newest value: a number and a unit, s, m, h or d (90s, 30m, 36h, 2d).",
        "on_stale": "warn (default) or fail: the freshness check's status when the data is older.",
    },
    "CsvOptions": {
        "delimiter": "One character between fields (default ,); not a line break.",
        "header": "true (default): the first line of each file names the fields; false: fields map to columns by position.",
        "quote": 'The quote character (default "); an empty string turns quoting off.',
    },
    "Dedupe": {
        "key": "A list of one or more columns (declared or partition): rows with the same key are duplicates, e.g. [payment_id].",
        "order_by": "Which row of a key is kept: `column [ASC|DESC] [NULLS FIRST|LAST]` terms, then file and line. NULLS LAST is the default.",
    },
    "Rule": {
        "name": "Identifier of the rule ([a-z_][a-z0-9_]*); it is the _reason of rows it quarantines.",
        "expect": "A SQL boolean over the row's columns; the row passes only when it is TRUE (FALSE and NULL fail). The one subquery allowed is `col IN (SELECT key FROM reference)`.",
        "owner": "Who answers for this rule (a team or an e-mail); default: the contract's owner.",
        "version": "Integer >= 1; raise it when the rule's meaning changes so facts before and after stay apart.",
        "description": "Free text shown with the rule's facts and failures.",
        "on_fail": "quarantine (default): failing rows go to the DLQ; warn: they stay clean and are only counted; abort: as quarantine, and any failure fails the run.",
        "fail_above": "Per-rule share (0-1) of failing rows above which the run fails, whatever the gate says.",
    },
    "Gate": {
        "warn_above": "Quarantined share of routed records (0-1) above which the run warns (default 0.01).",
        "fail_above": "Quarantined share (0-1) above which the run fails and clean rows are not published (default 0.05).",
        "on_stream_fail": "stop (default) or continue: what watch does after a micro-batch whose gate failed.",
    },
    "Outputs": {
        "warehouse": "The warehouse: a DuckDB file (a folder for the Spark engine); relative to the contract's folder.",
        "format": "Table format of the outputs: duckdb (one file, the embedded default) delta (a Delta Lake table per output, the Spark default) or iceberg (tables in an Iceberg catalog); default: the engine's.",
        "catalog": "For format: iceberg: the catalog (a key of catalogs:) the outputs are published into.",
        "namespace": "For format: iceberg: the catalog namespace of the output tables.",
        "clean": "Table of the rows that passed every rule.",
        "quarantine": "Table of quarantined rows with their reasons (the DLQ); its outbox is <quarantine>_outbox.",
        "duplicates": "Table of the rows dedupe dropped, with the lineage of the row kept (default <contract name>_duplicates, so contracts sharing a warehouse never share it).",
        "facts": "Table of quality facts, one per check and run (default quality_facts).",
        "partition_by": "Columns (or _logical_date) the clean table is meant to be partitioned by: checked against the columns, reserved (a run does not partition tables yet).",
        "export": "Folder the model's fact tables are exported to as Hive-partitioned Parquet.",
    },
    "Model": {
        "dimensions": "SCD2 dimensions built from changelog references, by table name.",
        "facts": "Fact tables built from each run's clean rows, by table name.",
        "marts": "Named SELECTs over model tables, materialized as tables (NAME: SQL or NAME: {sql, description}).",
    },
    "Dimension": {
        "reference": "The changelog reference the dimension is built from.",
        "key": "The business key: one column or a list.",
        "effective": "The reference column giving the time a version becomes valid.",
        "attributes": "The reference columns a version carries.",
    },
    "Fact": {
        "columns": "The clean-row columns the fact keeps (default: every declared column).",
        "derive": "Computed columns, NAME: SQL expression over the row.",
        "joins": "As-of joins to dimensions: each row gets the version valid at its event time.",
        "export": "Export as Hive-partitioned Parquet: true, a folder, or {path, time}.",
    },
    "AsOfJoin": {
        "dimension": "The dimension joined.",
        "on": "The fact columns that match the dimension's key, in key order (one column or a list).",
        "as_of": "The fact column giving the event time.",
        "on_missing": "unknown_member (default): keep the row with NULL attributes and <alias>_unknown TRUE; quarantine: route it to the DLQ.",
        "attributes": "Which dimension attributes to add (default: all).",
        "alias": "Name of the join, prefix of its _version and _unknown columns (default: the dimension).",
        "prefix": "Text put before each joined attribute's name.",
    },
    "FactExport": {
        "path": "Folder of the export (default: outputs.export/<fact>).",
        "time": "Column whose year and month partition the export.",
    },
    "Mart": {
        "sql": "A SELECT over model tables (dimensions, facts, earlier marts).",
        "description": "Free text describing the mart.",
    },
}
