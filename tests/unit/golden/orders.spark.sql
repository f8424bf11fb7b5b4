-- dedupe: rank by the total order
CREATE TEMPORARY VIEW _sg_ranked AS
SELECT
  `_t`.*,
  1 AS `_rn`,
  CAST(NULL AS STRING) AS `_kept_source_file`,
  CAST(NULL AS BIGINT) AS `_kept_source_line`
FROM `_sg_typed` AS `_t`;

-- dedupe: the kept rows
CREATE TEMPORARY VIEW _sg_kept AS
SELECT
  *
FROM _sg_ranked
WHERE
  `_rn` = 1;

-- route: one pass flag per check
CREATE TEMPORARY VIEW _sg_flags AS
SELECT
  `_r`.*,
  NOT `_r`.`_corrupt` AS `_ok_corrupt`,
  NOT `_r`.`_mismatch` AS `_ok_mismatch`,
  (
    `_r`.`_corrupt` OR NOT `oid` IS NULL
  ) AS `_ok_required`,
  `_r`.`_corrupt` OR (
    NOT cid IS NULL
  ) IS TRUE AS `_p0`,
  `_r`.`_corrupt` OR (
    NOT amt IS NULL AND amt > 0
  ) IS TRUE AS `_p1`,
  `_r`.`_corrupt`
  OR (
    CASE WHEN `cid` IS NULL THEN NULL ELSE NOT `_m0`.`_k` IS NULL END
  ) IS TRUE AS `_p2`
FROM `_sg_kept` AS `_r`
LEFT JOIN (
  SELECT DISTINCT
    TRY_CAST(`cid` AS INT) AS `_k`
  FROM _sg_ref_customers
  WHERE
    NOT `cid` IS NULL
) AS `_m0`
  ON `_r`.`cid` = `_m0`.`_k`;

-- route: _ok, _reason, _failed_rules
CREATE TEMPORARY VIEW _sg_routed AS
SELECT
  *,
  (
    `_ok_corrupt` AND `_ok_mismatch` AND `_ok_required` AND `_p0` AND `_p1` AND `_p2`
  ) AS `_ok`,
  CASE
    WHEN NOT `_ok_corrupt`
    THEN 'corrupt_record'
    WHEN NOT `_ok_mismatch`
    THEN 'type_mismatch'
    WHEN NOT `_ok_required`
    THEN 'missing_required'
    WHEN NOT `_p0`
    THEN 'null_customer'
    WHEN NOT `_p1`
    THEN 'non_positive_amount'
    WHEN NOT `_p2`
    THEN 'unknown_customer'
  END AS `_reason`,
  CASE
    WHEN NOT (
      `_ok_corrupt` AND `_ok_mismatch` AND `_ok_required` AND `_p0` AND `_p1` AND `_p2`
    )
    THEN FILTER(
      ARRAY(
        CASE
          WHEN NOT `_ok_corrupt`
          THEN STRUCT(
            'corrupt_record' AS name,
            'the record is a well-formed object of the declared shape' AS rule
          )
        END,
        CASE
          WHEN NOT `_ok_mismatch`
          THEN STRUCT('type_mismatch' AS name, 'every present value casts to its declared type' AS rule)
        END,
        CASE
          WHEN NOT `_ok_required`
          THEN STRUCT('missing_required' AS name, 'every nullable: false column has a value' AS rule)
        END,
        CASE
          WHEN NOT `_p0`
          THEN STRUCT('null_customer' AS name, 'cid IS NOT NULL' AS rule)
        END,
        CASE
          WHEN NOT `_p1`
          THEN STRUCT('non_positive_amount' AS name, 'amt IS NOT NULL AND amt > 0' AS rule)
        END,
        CASE
          WHEN NOT `_p2`
          THEN STRUCT('unknown_customer' AS name, 'cid IN (SELECT cid FROM customers)' AS rule)
        END
      ),
      x -> NOT x IS NULL
    )
  END AS `_failed_rules`
FROM _sg_flags;

-- publish: clean = WHERE _ok
INSERT INTO `good_orders`
SELECT
  `oid`,
  `cid`,
  `amt`,
  `ots`,
  CAST(`_source_file` AS STRING) AS `_source_file`,
  `_source_line`,
  'RUN' AS `_run_id`,
  CAST('2024-01-01' AS DATE) AS `_logical_date`,
  CAST(NULL AS STRING) AS `_recycled_from`
FROM _sg_routed
WHERE
  `_ok`;

-- publish: quarantine = WHERE NOT _ok
INSERT INTO `quarantine`
SELECT
  `oid`,
  `cid`,
  `amt`,
  `ots`,
  CAST(`_source_file` AS STRING) AS `_source_file`,
  `_source_line`,
  `_reason`,
  `_failed_rules`,
  `_rescued_data`,
  `_raw`,
  'RUN' AS `_run_id`,
  CAST('2024-01-01' AS DATE) AS `_logical_date`
FROM _sg_routed
WHERE
  NOT `_ok`;

-- publish: duplicates
INSERT INTO `order_duplicates`
SELECT
  `oid`,
  `cid`,
  `amt`,
  `ots`,
  CAST(`_source_file` AS STRING) AS `_source_file`,
  `_source_line`,
  CAST(`_kept_source_file` AS STRING) AS `_kept_source_file`,
  `_kept_source_line`,
  `_rescued_data`,
  'RUN' AS `_run_id`,
  CAST('2024-01-01' AS DATE) AS `_logical_date`
FROM _sg_ranked
WHERE
  `_rn` > 1;
