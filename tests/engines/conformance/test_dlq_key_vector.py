"""The DLQ key through each engine's own interface equals the pinned vector.

``_dlq_sk`` is the MERGE key of the inbox: the same quarantined row must get the same
key on every engine, or a rerun on another engine would duplicate the DLQ. The vector
(tests/unit/test_dlq_canonical.py) pins the canonical row JSON and its xxhash64
(seed 42); the query is the DLQ module's own, run through ``Engine.fetch``.
"""

from __future__ import annotations

from tests.engines.test_dlq_keys import vector_contract, vector_query  # noqa: F401 - fixture
from tests.unit.test_dlq_canonical import EXPECTED_JSON, EXPECTED_KEY


def test_dlq_key_vector(open_test_engine, vector_contract):  # noqa: F811
    eng = open_test_engine()
    ((j, k),) = eng.fetch(vector_query(vector_contract, eng.dialect))
    assert (j, k) == (EXPECTED_JSON, EXPECTED_KEY)
