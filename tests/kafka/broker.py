"""A real Apache Kafka broker for tests and benchmarks: KRaft mode, one JVM, loopback.

The jars come from Maven (jvm/kafka/pom.xml → .jars/kafka, ``make kafka-jars``). The
broker is one process acting as broker and controller, on free loopback ports, with its
log directory in a temp folder: ``kafka.tools.StorageTool format`` (what
``kafka-storage.sh format`` runs) writes the cluster id, then ``kafka.Kafka`` starts.
:meth:`Broker.restart` stops and starts the same broker (same ports, same log dir, so
every record survives) — the "broker restart mid-batch" test uses it.
"""

from __future__ import annotations

import base64
import os
import shutil
import socket
import subprocess
import tempfile
import time
import uuid
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
JARS = ROOT / ".jars" / "kafka"
#: A small heap and the serial collector: the machine is shared and the topics are tiny.
#: No perf-data file in the shared /tmp (``-XX:-UsePerfData``): one less way for a JVM to fail.
JVM_FLAGS = [
    "-Xms128m",
    "-Xmx512m",
    "-XX:+UseSerialGC",
    "-XX:TieredStopAtLevel=1",
    "-Xss1m",
    "-XX:-UsePerfData",
]


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _memory() -> str:
    """MemAvailable, for a JVM that could not reserve its heap on a crowded machine."""
    try:
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemAvailable:"):
                return "memory " + " ".join(line.split()[1:])
    except OSError:
        pass
    return "memory unknown"


def _last_words(text: str) -> str:
    """A JVM's last six unindented lines (its messages, not the config dump or stack frames)."""
    said = [ln for ln in text.splitlines() if ln and not ln[0].isspace()]
    return " | ".join(said[-6:])


def jars_ready() -> bool:
    return (JARS / ".fetched").exists() or any(JARS.glob("kafka_2.13-*.jar"))


class Broker:
    """One KRaft broker+controller; ``bootstrap`` is ``127.0.0.1:<port>``."""

    def __init__(self, workdir: Path | None = None) -> None:
        self.dir = Path(workdir or tempfile.mkdtemp(prefix="sg-kafka-"))
        self.dir.mkdir(parents=True, exist_ok=True)
        self.port, self.controller_port = free_port(), free_port()
        self.bootstrap = f"127.0.0.1:{self.port}"
        self.proc: subprocess.Popen | None = None
        self.config = self.dir / "server.properties"
        self.log = self.dir / "broker.log"

    # -- lifecycle ------------------------------------------------------------------
    def _java(self) -> str:
        home = os.environ.get("JAVA_HOME")
        java = Path(home, "bin", "java") if home else shutil.which("java")
        if not java:
            raise RuntimeError("java not found: the Kafka broker needs a JDK 17+")
        return str(java)

    def _cmd(self, main: str, *args: str) -> list[str]:
        return [self._java(), *JVM_FLAGS, "-cp", f"{JARS}/*", main, *args]

    def format(self) -> None:
        props = {
            "process.roles": "broker,controller",
            "node.id": "1",
            "controller.quorum.voters": f"1@127.0.0.1:{self.controller_port}",
            "listeners": f"PLAINTEXT://127.0.0.1:{self.port},CONTROLLER://127.0.0.1:{self.controller_port}",
            "advertised.listeners": f"PLAINTEXT://127.0.0.1:{self.port}",
            "controller.listener.names": "CONTROLLER",
            "inter.broker.listener.name": "PLAINTEXT",
            "listener.security.protocol.map": "PLAINTEXT:PLAINTEXT,CONTROLLER:PLAINTEXT",
            "log.dirs": str(self.dir / "data"),
            "num.partitions": "3",
            "auto.create.topics.enable": "false",
            "offsets.topic.replication.factor": "1",
            "offsets.topic.num.partitions": "3",
            "transaction.state.log.replication.factor": "1",
            "transaction.state.log.min.isr": "1",
            "share.coordinator.state.topic.replication.factor": "1",
            "share.coordinator.state.topic.min.isr": "1",
            "group.initial.rebalance.delay.ms": "0",
            "message.max.bytes": str(8 << 20),
            "replica.fetch.max.bytes": str(8 << 20),
            "log.retention.check.interval.ms": "1000",
            "log.segment.delete.delay.ms": "0",
            "num.network.threads": "2",
            "num.io.threads": "2",
            "background.threads": "2",
        }
        self.config.write_text("".join(f"{k}={v}\n" for k, v in props.items()), encoding="utf-8")
        # Up to three tries, each on an empty log directory with a new cluster id: a JVM
        # that fails to start on a loaded machine must not cost every Kafka test of the
        # run, and the last failure is raised with the tool's own words (not just "exit 1").
        for attempt in range(3):
            shutil.rmtree(self.dir / "data", ignore_errors=True)
            cluster = "-"
            while cluster[0] in "-_":  # an id starting with '-' reads as an option to the tool
                cluster = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
            done = subprocess.run(
                self._cmd(
                    "kafka.tools.StorageTool", "format", "-t", cluster, "-c", str(self.config)
                ),
                capture_output=True,
                text=True,
                timeout=120,
            )
            (self.dir / f"format-{attempt}.log").write_text(
                done.stdout + done.stderr, encoding="utf-8"
            )
            if done.returncode == 0:
                return
            time.sleep(1 + attempt)
        raise RuntimeError(
            f"kafka StorageTool format exited {done.returncode} three times ({_memory()}); "
            "its last words: " + _last_words(done.stdout + done.stderr)
        )

    def start(self, timeout: float = 120.0) -> Broker:
        if not self.config.exists():
            self.format()
        env = {**os.environ, "LOG_DIR": str(self.dir)}
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                self._cmd("kafka.Kafka", str(self.config)),
                stdout=log,
                stderr=subprocess.STDOUT,
                env=env,
                start_new_session=True,
            )
        self._wait_ready(timeout)
        return self

    def _wait_ready(self, timeout: float) -> None:
        from confluent_kafka.admin import AdminClient

        deadline = time.monotonic() + timeout
        admin = AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 0})
        while time.monotonic() < deadline:
            if self.proc is not None and self.proc.poll() is not None:
                raise RuntimeError(f"the Kafka broker exited ({_memory()}): {self._log_tail()}")
            try:
                meta = admin.list_topics(timeout=2)
                if meta.brokers:
                    return
            except Exception:  # noqa: BLE001 - not up yet
                pass
            time.sleep(0.3)
        raise RuntimeError(f"the Kafka broker did not start in {timeout:g} s: {self._log_tail()}")

    def _log_tail(self) -> str:
        """The broker log's last unindented lines: what CI shows after the folder is gone."""
        try:
            text = self.log.read_text(encoding="utf-8", errors="replace")
        except OSError:
            return f"no log at {self.log}"
        return _last_words(text) or f"empty log at {self.log}"

    def stop(self) -> None:
        if self.proc is None:
            return
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait(timeout=10)
        self.proc = None

    def restart(self, down_seconds: float = 0.0) -> None:
        self.stop()
        time.sleep(down_seconds)
        self.start()

    def close(self) -> None:
        self.stop()
        shutil.rmtree(self.dir, ignore_errors=True)

    # -- helpers for tests --------------------------------------------------------------
    def admin(self):  # noqa: ANN201
        from confluent_kafka.admin import AdminClient

        return AdminClient({"bootstrap.servers": self.bootstrap, "log_level": 0})

    def create_topic(self, name: str, partitions: int = 3, config: dict | None = None) -> str:
        from confluent_kafka.admin import NewTopic

        admin = self.admin()  # kept alive until the future resolves
        fut = admin.create_topics(
            [NewTopic(name, num_partitions=partitions, replication_factor=1, config=config or {})]
        )
        fut[name].result(timeout=30)
        return name

    def producer(self, **extra):  # noqa: ANN003, ANN201
        from confluent_kafka import Producer

        conf = {
            "bootstrap.servers": self.bootstrap,
            "linger.ms": 0,
            "enable.idempotence": True,
            "message.max.bytes": 8 << 20,
            "log_level": 0,
        }
        conf.update(extra)
        return Producer(conf)

    def produce(self, topic: str, messages: list[tuple[int, bytes | None]]) -> None:
        """Write ``(partition, value)`` pairs in order and wait until all are acknowledged."""
        p = self.producer()
        for part, value in messages:
            p.produce(topic, value=value, partition=part)
        left = p.flush(30)
        if left:
            raise RuntimeError(f"{left} messages not acknowledged")

    def delete_records(self, topic: str, partition: int, before: int) -> None:
        """Advance a partition's low watermark to ``before``: what retention does, now."""
        from confluent_kafka import TopicPartition

        admin = self.admin()
        fut = admin.delete_records([TopicPartition(topic, partition, before)])
        for f in fut.values():
            f.result(timeout=30)
