-- read: lines → typed rows
CREATE TEMPORARY TABLE _sg_typed AS
SELECT
  "_source_file",
  "_source_line",
  "oid",
  "cid",
  "amt",
  "ots",
  NOT "_ok" AS "_corrupt",
  CASE WHEN NOT "_ok" THEN "_line" END AS "_raw",
  "_mismatch",
  "_x0",
  "_x1",
  "_x2",
  "_x3",
  "_a0",
  "_a1",
  "_a2",
  "_a3",
  "_undeclared",
  CASE
    WHEN NOT "_undeclared" IS NULL OR "_mismatch"
    THEN JSON_MERGE_PATCH(
      COALESCE("_undeclared", '{}'),
      JSON_OBJECT(
        'oid', CASE WHEN "_x0" THEN JSON_EXTRACT("_line", '$."oid"') END,
        'cid', CASE WHEN "_x1" THEN JSON_EXTRACT("_line", '$."cid"') END,
        'amt', CASE WHEN "_x2" THEN JSON_EXTRACT("_line", '$."amt"') END,
        'ots', CASE WHEN "_x3" THEN JSON_EXTRACT("_line", '$."ots"') END
      )
    )
  END AS "_rescued_data"
FROM (
  SELECT
    "_source_file",
    "_source_line",
    "_line",
    "_ok",
    "_undeclared",
    "_s0",
    "_s1",
    "_s2",
    "_s3",
    "oid",
    "cid",
    "amt",
    "ots",
    (
      "_x0" OR "_x1" OR "_x2" OR "_x3"
    ) AS "_mismatch",
    "_x0",
    "_x1",
    "_x2",
    "_x3",
    "_a0",
    "_a1",
    "_a2",
    "_a3"
  FROM (
    SELECT
      "_source_file",
      "_source_line",
      "_line",
      "_ok",
      "_undeclared",
      "_s0",
      "_s1",
      "_s2",
      "_s3",
      "oid",
      "cid",
      "amt",
      "ots",
      "_ok" AND (
        "_n0" OR (
          NOT "_s0" IS NULL AND "oid" IS NULL
        )
      ) AS "_x0",
      "_ok" AND (
        "_n1" OR (
          NOT "_s1" IS NULL AND "cid" IS NULL
        )
      ) AS "_x1",
      "_ok" AND (
        "_n2" OR (
          NOT "_s2" IS NULL AND "amt" IS NULL
        )
      ) AS "_x2",
      "_ok" AND (
        "_n3" OR (
          NOT "_s3" IS NULL AND "ots" IS NULL
        )
      ) AS "_x3",
      COALESCE("_ok" AND "_a0", FALSE) AS "_a0",
      COALESCE("_ok" AND "_a1", FALSE) AS "_a1",
      COALESCE("_ok" AND "_a2", FALSE) AS "_a2",
      COALESCE("_ok" AND "_a3", FALSE) AS "_a3"
    FROM (
      SELECT
        "_source_file",
        "_source_line",
        "_line",
        "_ok",
        "_undeclared",
        "_s0",
        "_s1",
        "_s2",
        "_s3",
        "_n0",
        "_n1",
        "_n2",
        "_n3",
        "_a0",
        "_a1",
        "_a2",
        "_a3",
        CASE
          WHEN REGEXP_MATCHES("_s0", '^ *[+-]?[0-9]+ *\z')
          THEN TRY_CAST(TRIM("_s0") AS INT)
        END AS "oid",
        CASE
          WHEN REGEXP_MATCHES("_s1", '^ *[+-]?[0-9]+ *\z')
          THEN TRY_CAST(TRIM("_s1") AS INT)
        END AS "cid",
        CASE
          WHEN REGEXP_MATCHES("_s2", '^ *[+-]?[0-9]+ *\z')
          THEN TRY_CAST(TRIM("_s2") AS INT)
        END AS "amt",
        CASE
          WHEN REGEXP_MATCHES("_s3", '^ *[+-]?[0-9]+ *\z')
          THEN TRY_CAST(TRIM("_s3") AS BIGINT)
        END AS "ots"
      FROM (
        SELECT
          "_source_file",
          "_source_line",
          "_line",
          "_ok",
          CASE WHEN "_ok" AND NOT "_n0" THEN "_t0" END AS "_s0",
          CASE WHEN "_ok" AND NOT "_n1" THEN "_t1" END AS "_s1",
          CASE WHEN "_ok" AND NOT "_n2" THEN "_t2" END AS "_s2",
          CASE WHEN "_ok" AND NOT "_n3" THEN "_t3" END AS "_s3",
          "_n0",
          "_n1",
          "_n2",
          "_n3",
          "_a0",
          "_a1",
          "_a2",
          "_a3",
          CASE
            WHEN "_ok" AND "_e"
            THEN NULLIF(
              JSON_MERGE_PATCH("_line", JSON_OBJECT('oid', NULL, 'cid', NULL, 'amt', NULL, 'ots', NULL)),
              '{}'
            )
          END AS "_undeclared"
        FROM (
          SELECT
            "_source_file",
            "_source_line",
            "_line",
            "_obj",
            "_t0",
            "_t1",
            "_t2",
            "_t3",
            "_e",
            "_obj"
            AND NOT CASE WHEN "_e" THEN LENGTH(LIST_DISTINCT("_k")) <> LENGTH("_k") ELSE FALSE END AS "_ok",
            "_n0",
            "_n1",
            "_n2",
            "_n3",
            "_a0",
            "_a1",
            "_a2",
            "_a3"
          FROM (
            SELECT
              "_source_file",
              "_source_line",
              "_line",
              "_obj",
              "_t0",
              "_t1",
              "_t2",
              "_t3",
              "_k",
              COALESCE(
                LENGTH("_k") <> (
                  CAST(LIST_CONTAINS("_k", 'oid') AS INT) + CAST(LIST_CONTAINS("_k", 'cid') AS INT) + CAST(LIST_CONTAINS("_k", 'amt') AS INT) + CAST(LIST_CONTAINS("_k", 'ots') AS INT)
                ),
                FALSE
              ) AS "_e",
              CASE
                WHEN STARTS_WITH("_t0", '{') OR STARTS_WITH("_t0", '[')
                THEN JSON_TYPE("_line", '$."oid"') IN ('OBJECT', 'ARRAY')
                ELSE FALSE
              END AS "_n0",
              CASE
                WHEN STARTS_WITH("_t1", '{') OR STARTS_WITH("_t1", '[')
                THEN JSON_TYPE("_line", '$."cid"') IN ('OBJECT', 'ARRAY')
                ELSE FALSE
              END AS "_n1",
              CASE
                WHEN STARTS_WITH("_t2", '{') OR STARTS_WITH("_t2", '[')
                THEN JSON_TYPE("_line", '$."amt"') IN ('OBJECT', 'ARRAY')
                ELSE FALSE
              END AS "_n2",
              CASE
                WHEN STARTS_WITH("_t3", '{') OR STARTS_WITH("_t3", '[')
                THEN JSON_TYPE("_line", '$."ots"') IN ('OBJECT', 'ARRAY')
                ELSE FALSE
              END AS "_n3",
              NOT LIST_CONTAINS("_k", 'oid') AS "_a0",
              NOT LIST_CONTAINS("_k", 'cid') AS "_a1",
              NOT LIST_CONTAINS("_k", 'amt') AS "_a2",
              NOT LIST_CONTAINS("_k", 'ots') AS "_a3"
            FROM (
              SELECT
                "_source_file",
                "_source_line",
                "_line",
                "_obj",
                "_k",
                "_v"[1] AS "_t0",
                "_v"[2] AS "_t1",
                "_v"[3] AS "_t2",
                "_v"[4] AS "_t3"
              FROM (
                SELECT
                  "_source_file",
                  "_source_line",
                  "_line",
                  "_obj",
                  CASE
                    WHEN "_obj"
                    THEN JSON_EXTRACT_STRING("_line", ['$."oid"', '$."cid"', '$."amt"', '$."ots"'])
                  END AS "_v",
                  CASE WHEN "_obj" THEN JSON_KEYS("_line") END AS "_k"
                FROM (
                  SELECT
                    "_source_file",
                    "_source_line",
                    "_line",
                    CASE
                      WHEN CASE WHEN "_bad_utf8" THEN FALSE ELSE JSON_VALID("_line") END
                      THEN (
                        STARTS_WITH("_line", '{') OR REGEXP_MATCHES("_line", '^[ \t\r\n]*\{')
                      )
                      AND NOT CASE
                        WHEN REGEXP_MATCHES("_line", ',[ \t\r\n]*[\]}]')
                        OR "_line" ILIKE '%nan%'
                        OR "_line" ILIKE '%inf%'
                        THEN REGEXP_MATCHES(
                          REGEXP_REPLACE("_line", '"(?:[^"\\]|\\.)*"|([:,\[][ \t\r\n]*)(?:NaN|-?Infinity)', '\1', 'g'),
                          ',[ \t\r\n]*[\]}]|(?i:nan|inf)'
                        )
                        ELSE FALSE
                      END
                      ELSE FALSE
                    END AS "_obj"
                  FROM "_sg_lines" AS "_lp"
                ) AS "_j"
              ) AS "_v"
            ) AS "_w"
          ) AS "_k"
        ) AS "_d"
      ) AS "_t"
    ) AS "_c"
  ) AS "_x"
) AS "_m";

-- dedupe: rank by the total order
CREATE TEMPORARY TABLE _sg_ranked AS
SELECT
  "_t".*,
  1 AS "_rn",
  CAST(NULL AS TEXT) AS "_kept_source_file",
  CAST(NULL AS BIGINT) AS "_kept_source_line"
FROM "_sg_typed" AS "_t";

-- dedupe: the kept rows
CREATE TEMPORARY TABLE _sg_kept AS
SELECT
  *
FROM _sg_ranked
WHERE
  "_rn" = 1;

-- route: one pass flag per check
CREATE TEMPORARY TABLE _sg_flags AS
SELECT
  "_r".*,
  NOT "_r"."_corrupt" AS "_ok_corrupt",
  NOT "_r"."_mismatch" AS "_ok_mismatch",
  (
    "_r"."_corrupt" OR NOT "oid" IS NULL
  ) AS "_ok_required",
  "_r"."_corrupt" OR (
    NOT cid IS NULL
  ) IS TRUE AS "_p0",
  "_r"."_corrupt" OR (
    NOT amt IS NULL AND amt > 0
  ) IS TRUE AS "_p1",
  "_r"."_corrupt"
  OR (
    CASE WHEN "cid" IS NULL THEN NULL ELSE NOT "_m0"."_k" IS NULL END
  ) IS TRUE AS "_p2"
FROM "_sg_kept" AS "_r"
LEFT JOIN (
  SELECT DISTINCT
    TRY_CAST("cid" AS INT) AS "_k"
  FROM _sg_ref_customers
  WHERE
    NOT "cid" IS NULL
) AS "_m0"
  ON "_r"."cid" = "_m0"."_k";

-- route: _ok, _reason, _failed_rules
CREATE TEMPORARY TABLE _sg_routed AS
SELECT
  *,
  (
    "_ok_corrupt" AND "_ok_mismatch" AND "_ok_required" AND "_p0" AND "_p1" AND "_p2"
  ) AS "_ok",
  CASE
    WHEN NOT "_ok_corrupt"
    THEN 'corrupt_record'
    WHEN NOT "_ok_mismatch"
    THEN 'type_mismatch'
    WHEN NOT "_ok_required"
    THEN 'missing_required'
    WHEN NOT "_p0"
    THEN 'null_customer'
    WHEN NOT "_p1"
    THEN 'non_positive_amount'
    WHEN NOT "_p2"
    THEN 'unknown_customer'
  END AS "_reason",
  CASE
    WHEN NOT (
      "_ok_corrupt" AND "_ok_mismatch" AND "_ok_required" AND "_p0" AND "_p1" AND "_p2"
    )
    THEN LIST_FILTER(
      [
        CASE
          WHEN NOT "_ok_corrupt"
          THEN {'name': 'corrupt_record', 'rule': 'the record is a well-formed object of the declared shape'}
        END,
        CASE
          WHEN NOT "_ok_mismatch"
          THEN {'name': 'type_mismatch', 'rule': 'every present value casts to its declared type'}
        END,
        CASE
          WHEN NOT "_ok_required"
          THEN {'name': 'missing_required', 'rule': 'every nullable: false column has a value'}
        END,
        CASE WHEN NOT "_p0" THEN {'name': 'null_customer', 'rule': 'cid IS NOT NULL'} END,
        CASE
          WHEN NOT "_p1"
          THEN {'name': 'non_positive_amount', 'rule': 'amt IS NOT NULL AND amt > 0'}
        END,
        CASE
          WHEN NOT "_p2"
          THEN {'name': 'unknown_customer', 'rule': 'cid IN (SELECT cid FROM customers)'}
        END
      ],
      LAMBDA x : NOT x IS NULL
    )
  END AS "_failed_rules"
FROM _sg_flags;

-- publish: clean = WHERE _ok
INSERT INTO "good_orders"
SELECT
  "oid",
  "cid",
  "amt",
  "ots",
  CAST("_source_file" AS TEXT) AS "_source_file",
  "_source_line",
  'RUN' AS "_run_id",
  CAST('2024-01-01' AS DATE) AS "_logical_date",
  CAST(NULL AS TEXT) AS "_recycled_from"
FROM _sg_routed
WHERE
  "_ok";

-- publish: quarantine = WHERE NOT _ok
INSERT INTO "quarantine"
SELECT
  "oid",
  "cid",
  "amt",
  "ots",
  CAST("_source_file" AS TEXT) AS "_source_file",
  "_source_line",
  "_reason",
  "_failed_rules",
  "_rescued_data",
  "_raw",
  'RUN' AS "_run_id",
  CAST('2024-01-01' AS DATE) AS "_logical_date"
FROM _sg_routed
WHERE
  NOT "_ok";

-- publish: duplicates
INSERT INTO "order_duplicates"
SELECT
  "oid",
  "cid",
  "amt",
  "ots",
  CAST("_source_file" AS TEXT) AS "_source_file",
  "_source_line",
  CAST("_kept_source_file" AS TEXT) AS "_kept_source_file",
  "_kept_source_line",
  "_rescued_data",
  'RUN' AS "_run_id",
  CAST('2024-01-01' AS DATE) AS "_logical_date"
FROM _sg_ranked
WHERE
  "_rn" > 1;
