"""``source.kafka``: the Kafka topic(s) a streaming contract reads (``source.format: kafka``).

Why a section of its own rather than more keys on ``source``: everything here is about
*where records come from* (brokers, topics, offsets, credentials), nothing about what a
record is — that stays in ``source.columns``, and each message's value is read exactly
like one NDJSON line (docs/streaming.md § Kafka). Secrets (a SASL password) are written
as ``${secret:scope/key}`` tokens: the loader resolves them to a :class:`~.secret.Secret`
(shown as ``***``) that only engines/kafka_config.py reveals, so the contract file never
holds one and no output can.
"""

from __future__ import annotations

import re
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, field_validator, model_validator

from .secret import Secret

#: Kafka's own rule for topic names (legal characters, at most 249 of them).
TOPIC = r"^[A-Za-z0-9._-]{1,249}$"


class KafkaSecurity(BaseModel):
    """Client security settings, mapped to librdkafka (embedded engine) and to the Java
    client (Spark's Kafka source) by engines/kafka_config.py."""

    model_config = ConfigDict(extra="forbid")

    protocol: Literal["PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"] = "PLAINTEXT"
    sasl_mechanism: Literal["PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512"] | None = None
    username: str | None = None
    password: Secret | None = None  # write ${secret:scope/key}; only the driver reveals it
    ca_location: str | None = None  # a PEM file of trusted CAs (SSL, SASL_SSL)

    @model_validator(mode="after")
    def _sasl_complete(self) -> KafkaSecurity:
        sasl = self.protocol.startswith("SASL")
        if sasl and (self.sasl_mechanism is None or not self.username or not self.password):
            raise ValueError(
                "SASL needs sasl_mechanism, username and password (the password as "
                "${secret:scope/key})"
            )
        if not sasl and (self.sasl_mechanism or self.username or self.password):
            raise ValueError(
                f"sasl_mechanism/username/password need a SASL protocol, not {self.protocol}"
            )
        return self


class KafkaSource(BaseModel):
    """Where a Kafka source reads, and how much per micro-batch.

    ``starting_offsets`` applies only to partitions the offsets ledger has never seen:
    ``earliest`` (every retained record), ``latest`` (only records produced after the
    first micro-batch looked: the position is recorded at once, so nothing produced
    afterwards is skipped), or ``{topic: {partition: offset}}``. Afterwards the ledger
    decides, never Kafka's committed group offsets.

    ``on_offsets_lost`` — the ledger expects offset N but retention already deleted it
    (the partition now starts later): ``fail`` (default) stops with an error naming the
    topic, partition and the lost range; ``skip`` carries on from the first retained
    offset and records the loss in the ``kafka_offsets_contiguous`` fact (a warning) and
    in the offsets ledger, so the gap is governed, never silent.
    """

    model_config = ConfigDict(extra="forbid")

    bootstrap_servers: str = Field(min_length=1)
    topics: list[str] = Field(min_length=1)
    value_format: Literal["json"] = "json"
    starting_offsets: Literal["earliest", "latest"] | dict[str, dict[int, int]] = "earliest"
    max_records_per_batch: int = Field(default=100_000, ge=1)
    on_offsets_lost: Literal["fail", "skip"] = "fail"
    #: consumer group id (Kafka's committed offsets are only a monitoring hint)
    group_id: str | None = None
    #: how long a micro-batch waits for the brokers (metadata, watermarks, fetches)
    timeout_seconds: float = Field(default=30.0, gt=0)
    security: KafkaSecurity = Field(default_factory=KafkaSecurity)

    @field_validator("topics")
    @classmethod
    def _topic_names(cls, v: list[str]) -> list[str]:
        for t in v:
            if not re.match(TOPIC, t) or t in (".", ".."):
                raise ValueError(f"'{t}' is not a Kafka topic name (letters, digits, . _ -)")
        if len(set(v)) != len(v):
            raise ValueError("a topic is listed twice")
        return v

    @field_validator("bootstrap_servers")
    @classmethod
    def _servers(cls, v: str) -> str:
        for hp in v.split(","):
            if not re.fullmatch(r"\s*[^\s:,]+:\d{1,5}\s*", hp):
                raise ValueError(f"bootstrap server '{hp.strip()}' must be host:port")
        return ",".join(hp.strip() for hp in v.split(","))

    @model_validator(mode="after")
    def _start_topics(self) -> KafkaSource:
        if isinstance(self.starting_offsets, dict):
            for t, parts in self.starting_offsets.items():
                if t not in self.topics:
                    raise ValueError(f"starting_offsets names topic '{t}', not in topics")
                for p, o in parts.items():
                    if p < 0 or o < 0:
                        raise ValueError("starting_offsets partitions and offsets are >= 0")
        return self

    def group(self, contract: str) -> str:
        return self.group_id or f"sluicegate-{contract}"


__all__ = ["KafkaSecurity", "KafkaSource"]
