"""``source.format: kafka``: the contract's shape, the client settings, a message's text."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from sluicegate.compile.contract_check import load_contract
from sluicegate.engines.kafka_config import librdkafka_config, spark_options
from sluicegate.engines.kafka_consumer import decode
from sluicegate.errors import ContractError


def contract(tmp_path: Path, source: dict) -> Path:
    doc = {
        "name": "k",
        "source": {"columns": {"id": "BIGINT"}, **source},
        "outputs": {"warehouse": "w.duckdb", "clean": "c", "quarantine": "q"},
    }
    p = tmp_path / "c.yml"
    p.write_text(json.dumps(doc), encoding="utf-8")
    return p


KAFKA = {"format": "kafka", "kafka": {"bootstrap_servers": "127.0.0.1:9092", "topics": ["t"]}}


def problems(tmp_path: Path, source: dict) -> str:
    with pytest.raises(ContractError) as e:
        load_contract(contract(tmp_path, source))
    return str(e.value.render())


def test_a_kafka_source_loads_with_defaults(tmp_path):
    c = load_contract(contract(tmp_path, KAFKA)).contract
    k = c.source.kafka
    assert (k.starting_offsets, k.max_records_per_batch, k.on_offsets_lost) == (
        "earliest",
        100_000,
        "fail",
    )
    assert k.group("k") == "sluicegate-k" and c.source.path == ""


@pytest.mark.parametrize(
    ("source", "says"),
    [
        ({"format": "kafka"}, "format: kafka needs a kafka: section"),
        ({**KAFKA, "path": "x"}, "a Kafka source has no path"),
        ({"path": "x", "kafka": KAFKA["kafka"]}, "kafka: is only for format: kafka"),
        ({"format": "ndjson"}, "path is required"),
        (
            {**KAFKA, "kafka": {**KAFKA["kafka"], "topics": ["bad topic"]}},
            "is not a Kafka topic name",
        ),
        ({**KAFKA, "kafka": {**KAFKA["kafka"], "bootstrap_servers": "host"}}, "must be host:port"),
        ({**KAFKA, "kafka": {**KAFKA["kafka"], "topics": []}}, "topics"),
        (
            {**KAFKA, "kafka": {**KAFKA["kafka"], "starting_offsets": {"other": {0: 1}}}},
            "starting_offsets names topic 'other'",
        ),
        (
            {**KAFKA, "kafka": {**KAFKA["kafka"], "security": {"protocol": "SASL_SSL"}}},
            "SASL needs sasl_mechanism, username and password",
        ),
        (
            {**KAFKA, "kafka": {**KAFKA["kafka"], "max_records_per_batch": 0}},
            "max_records_per_batch",
        ),
        ({**KAFKA, "kafka": {**KAFKA["kafka"], "bootstrap": "x:1"}}, "bootstrap"),
    ],
)
def test_contract_errors_name_the_key(tmp_path, source, says):
    assert says in problems(tmp_path, source)


def test_security_maps_to_both_clients_and_the_secret_is_redacted(tmp_path, monkeypatch):
    monkeypatch.setenv("SLUICEGATE_SECRET_KAFKA_PW", 'p"w\\x-long-enough')
    src = {
        **KAFKA,
        "kafka": {
            **KAFKA["kafka"],
            "security": {
                "protocol": "SASL_SSL",
                "sasl_mechanism": "SCRAM-SHA-512",
                "username": "u",
                "password": "${secret:kafka/pw}",
                "ca_location": "/ca.pem",
            },
        },
    }
    loaded = load_contract(contract(tmp_path, src))
    spec = loaded.contract.source.kafka
    rd = librdkafka_config(spec, "k")
    assert (rd["security.protocol"], rd["sasl.mechanisms"], rd["sasl.password"]) == (
        "SASL_SSL",
        "SCRAM-SHA-512",
        'p"w\\x-long-enough',
    )
    assert rd["enable.auto.commit"] is False and rd["auto.offset.reset"] == "error"
    sp = spark_options(spec)
    assert sp["kafka.sasl.jaas.config"] == (
        "org.apache.kafka.common.security.scram.ScramLoginModule required "
        'username="u" password="p\\"w\\\\x-long-enough";'
    )
    assert sp["kafka.ssl.truststore.location"] == "/ca.pem"
    assert 'p"w\\x-long-enough' not in loaded.redactor(json.dumps(rd))


@pytest.mark.parametrize(
    ("value", "text", "bad"),
    [
        (None, "", False),
        (b"", "", False),
        (b'{"a":1}\r\n', '{"a":1}', False),
        ("\ufeff".encode() + b'{"a":1}', '{"a":1}', False),
        (b"\xff{}", "\ufffd{}", True),
        (b'{"a":"\xc3\xa9"}', '{"a":"é"}', False),
    ],
)
def test_a_message_value_as_record_text(value, text, bad):
    assert decode(value) == (text, bad)
