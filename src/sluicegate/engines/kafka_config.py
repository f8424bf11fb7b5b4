"""A contract's ``source.kafka`` as client settings: librdkafka's and the Java client's.

One mapping, two spellings: the embedded engine's consumer (confluent-kafka, i.e.
librdkafka) and Spark's Kafka source (the Java client, options prefixed ``kafka.``)
name the same settings differently (``sasl.mechanisms`` vs ``sasl.mechanism``, a JAAS
line vs ``sasl.username``/``sasl.password``). Keeping both here means a contract's
security settings cannot mean one thing on DuckDB and another on Spark.
"""

from __future__ import annotations

from typing import Any

from ..contract.secret import reveal

_JAAS = {
    "PLAIN": "org.apache.kafka.common.security.plain.PlainLoginModule",
    "SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
    "SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
}


def librdkafka_config(spec: Any, contract: str) -> dict[str, Any]:
    """Consumer settings for confluent-kafka: no auto commit, no auto offset reset.

    ``auto.offset.reset: error``: a fetch at an offset that no longer exists must reach
    sluicegate (retention deleted what the ledger expected), never be silently moved.
    """
    sec = spec.security
    conf: dict[str, Any] = {
        "bootstrap.servers": spec.bootstrap_servers,
        "group.id": spec.group(contract),
        "enable.auto.commit": False,
        "enable.auto.offset.store": False,
        "auto.offset.reset": "error",
        "enable.partition.eof": True,
        "security.protocol": sec.protocol,
        "fetch.message.max.bytes": 16 << 20,
        "receive.message.max.bytes": 64 << 20,
        "socket.timeout.ms": int(spec.timeout_seconds * 1000),
        "log_level": 0,  # librdkafka's own stderr logging: errors reach us as exceptions
    }
    if sec.sasl_mechanism:
        conf["sasl.mechanisms"] = sec.sasl_mechanism
        conf["sasl.username"] = sec.username
        conf["sasl.password"] = reveal(sec.password)  # the driver boundary
    if sec.ca_location:
        conf["ssl.ca.location"] = sec.ca_location
    return conf


def spark_options(spec: Any) -> dict[str, str]:
    """``kafka.*`` options of Spark's Kafka source for the same brokers and security."""
    sec = spec.security
    opts = {
        "kafka.bootstrap.servers": spec.bootstrap_servers,
        "kafka.security.protocol": sec.protocol,
        "kafka.request.timeout.ms": str(int(spec.timeout_seconds * 1000)),
        "kafka.default.api.timeout.ms": str(int(spec.timeout_seconds * 1000)),
    }
    if sec.sasl_mechanism:
        user = _jaas_quote(sec.username or "")
        pw = _jaas_quote(reveal(sec.password) or "")  # the driver boundary
        opts["kafka.sasl.mechanism"] = sec.sasl_mechanism
        opts["kafka.sasl.jaas.config"] = (
            f'{_JAAS[sec.sasl_mechanism]} required username="{user}" password="{pw}";'
        )
    if sec.ca_location:
        opts["kafka.ssl.truststore.type"] = "PEM"
        opts["kafka.ssl.truststore.location"] = sec.ca_location
    return opts


def _jaas_quote(text: str) -> str:
    return text.replace("\\", "\\\\").replace('"', '\\"')


__all__ = ["librdkafka_config", "spark_options"]
