"""Burrow (Debian's ``burrow`` package, 1.2.1), the consumer-lag checker, against the server: its
``kafka`` consumer module reads the group's commits from ``__consumer_offsets`` and its cluster
module the partitions' high watermarks, and its HTTP API reports the group's partitions with
the true lag while confluent-kafka consumers commit. Burrow 1.2.1 keeps its own bookkeeping in a
ZooKeeper (Debian's ``zookeeperd``), which the test runs on a free port in a tmp dir."""

from __future__ import annotations

import json
import shutil
import subprocess
import urllib.error
import urllib.request
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import Consumer, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

from tests.harness import ServerProcess, free_port, wait_until

BURROW = shutil.which("Burrow")
JAVA = shutil.which("java")
ZOOKEEPER_JAR = Path("/usr/share/java/zookeeper.jar")
PARTITIONS = 2
RECORDS = 12  # per partition


def _stop(proc: subprocess.Popen[bytes]) -> None:
    proc.terminate()
    try:
        proc.wait(10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


@pytest.fixture
def zookeeper(tmp_path: Path) -> Iterator[str]:
    assert JAVA is not None and ZOOKEEPER_JAR.is_file(), \
        "zookeeperd is installed by the Makefile's SYSTEM_DEPS"
    port = free_port()
    log = (tmp_path / "zookeeper.log").open("wb")
    proc = subprocess.Popen(
        [JAVA, "-Dzookeeper.admin.enableServer=false", "-cp", str(ZOOKEEPER_JAR),
         "org.apache.zookeeper.server.ZooKeeperServerMain", str(port),
         str(tmp_path / "zookeeper")], stdout=log, stderr=subprocess.STDOUT)
    try:
        wait_until(lambda: _listening(port) or proc.poll() is not None, timeout=30,
                   message="ZooKeeper to listen")
        assert proc.poll() is None, (tmp_path / "zookeeper.log").read_text()
        yield f"127.0.0.1:{port}"
    finally:
        _stop(proc)
        log.close()


def _listening(port: int) -> bool:
    import socket

    with socket.socket() as sock:
        return sock.connect_ex(("127.0.0.1", port)) == 0


BURROW_CONFIG = """
[general]
pidfile="{dir}/burrow.pid"
stdout-logfile="{dir}/burrow.out"

[logging]
filename="{dir}/burrow.log"
level="info"

[zookeeper]
servers=["{zookeeper}"]
timeout=6
root-path="/burrow"

[client-profile.test]
client-id="burrow-test"
kafka-version="0.10.0"

[cluster.local]
class-name="kafka"
servers=["{kafka}"]
client-profile="test"
topic-refresh=1
offset-refresh=1

[consumer.local]
class-name="kafka"
cluster="local"
servers=["{kafka}"]
client-profile="test"
offsets-topic="__consumer_offsets"
start-latest=false
group-whitelist="^lagged-.*$"

[httpserver.default]
address="127.0.0.1:{http}"

[storage.default]
class-name="inmemory"
workers=4
intervals=10
expire-group=604800
min-distance=1

# the lag endpoint answers from the evaluator's cache, 10 s by default: a commit would reach
# the answer up to 10 s after Burrow read it
[evaluator.default]
class-name="caching"
expire-cache=1
"""


def burrow_get(port: int, path: str) -> Any:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}{path}", timeout=5) as answer:
            return json.loads(answer.read())
    except (urllib.error.URLError, ConnectionError, json.JSONDecodeError):
        return None


def true_lag(server: ServerProcess, group: str, topic: str) -> dict[int, int]:
    consumer = Consumer({"bootstrap.servers": server.bootstrap, "group.id": group})
    try:
        committed = consumer.committed([TopicPartition(topic, p) for p in range(PARTITIONS)],
                                       timeout=10)
        return {tp.partition: consumer.get_watermark_offsets(tp, timeout=10)[1] - tp.offset
                for tp in committed}
    finally:
        consumer.close()


def consume_and_commit(server: ServerProcess, group: str, topic: str, count: int) -> None:
    """``count`` more records of each partition consumed by the group, then committed."""
    consumer = Consumer({"bootstrap.servers": server.bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.subscribe([topic])
        got: dict[int, int] = {}
        positions: dict[int, int] = {}

        def consumed() -> bool:
            message = consumer.poll(0.2)
            if message is not None and message.error() is None:
                partition = int(message.partition() or 0)
                if got.get(partition, 0) < count:
                    got[partition] = got.get(partition, 0) + 1
                    positions[partition] = int(message.offset() or 0) + 1
            return len(got) == PARTITIONS and all(n >= count for n in got.values())

        wait_until(consumed, timeout=30, interval=0, message=f"{count} records for {group}")
        consumer.commit(offsets=[TopicPartition(topic, p, o) for p, o in positions.items()],
                        asynchronous=False)
    finally:
        consumer.close()


@pytest.mark.slow
def test_burrow_reports_the_true_lag_while_consumers_commit(tmp_path: Path,
                                                            zookeeper: str) -> None:
    assert BURROW is not None, "burrow is installed by the Makefile's SYSTEM_DEPS"
    with ServerProcess(tmp_path / "data",
                       {"group.initial.rebalance.delay.ms": "0"}).start() as server:
        topic, group = f"orders-{uuid.uuid4().hex[:6]}", f"lagged-{uuid.uuid4().hex[:6]}"
        admin = AdminClient({"bootstrap.servers": server.bootstrap})
        admin.create_topics([NewTopic(topic, PARTITIONS, 1)])[topic].result(15)
        producer = Producer({"bootstrap.servers": server.bootstrap})
        for i in range(RECORDS * PARTITIONS):
            producer.produce(topic, b"order-%d" % i, partition=i % PARTITIONS)
        assert producer.flush(15) == 0
        consume_and_commit(server, group, topic, 5)  # each partition

        http = free_port()
        config_dir = tmp_path / "burrow"
        config_dir.mkdir()
        (config_dir / "burrow.toml").write_text(BURROW_CONFIG.format(
            dir=config_dir, zookeeper=zookeeper, kafka=server.bootstrap, http=http))
        burrow = subprocess.Popen([BURROW, "--config-dir", str(config_dir)],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        try:
            def reported() -> dict[int, int] | None:
                answer = burrow_get(http, f"/v3/kafka/local/consumer/{group}/lag")
                if not answer or answer.get("error"):
                    return None
                status = answer["status"]
                partitions = {p["partition"]: p["current_lag"] for p in status["partitions"]
                              if p["topic"] == topic}
                return partitions if len(partitions) == PARTITIONS else None

            def reports(lag: dict[int, int]) -> Callable[[], bool]:
                return lambda: reported() == lag

            for more in (0, 4):
                if more:
                    consume_and_commit(server, group, topic, more)
                expected = true_lag(server, group, topic)
                assert expected == dict.fromkeys(range(PARTITIONS), RECORDS - 5 - more)
                wait_until(reports(expected), timeout=60,
                           message=f"Burrow's lag of {group} to be {expected}")
        finally:
            _stop(burrow)
