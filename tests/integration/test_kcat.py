"""Debian's kcat 1.7 (librdkafka 2.0.2) listing metadata as JSON (``kcat -L -J``)."""

from __future__ import annotations

import json
import shutil
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka.admin import AdminClient, NewTopic

from tests.harness import ServerProcess

KCAT = shutil.which("kcat") or shutil.which("kafkacat")
pytestmark = pytest.mark.skipif(KCAT is None, reason="kcat is not installed")


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def kcat_list(server: ServerProcess, *extra: str) -> dict[str, Any]:
    assert KCAT is not None
    done = subprocess.run([KCAT, "-b", server.bootstrap, "-L", "-J", "-m", "10", *extra],
                          capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)


def test_kcat_lists_broker_and_topics(shared_server: ServerProcess) -> None:
    admin = AdminClient({"bootstrap.servers": shared_server.bootstrap})
    name = unique("kcat-listed")
    admin.create_topics([NewTopic(name, num_partitions=3, replication_factor=1)])[name].result(10)
    listing = kcat_list(shared_server)
    assert listing["controllerid"] == 1
    assert listing["originating_broker"]["id"] == 1
    assert listing["brokers"] == [{"id": 1, "name": shared_server.bootstrap}]
    topics = {t["topic"]: t for t in listing["topics"]}
    assert name in topics
    assert "error" not in topics[name]
    partitions = topics[name]["partitions"]
    assert [p["partition"] for p in partitions] == [0, 1, 2]
    for partition in partitions:
        assert partition["leader"] == 1
        assert partition["replicas"] == [{"id": 1}] and partition["isrs"] == [{"id": 1}]


def test_kcat_single_topic_query_auto_creates(shared_server: ServerProcess) -> None:
    name = unique("kcat-auto")
    listing = kcat_list(shared_server, "-t", name)
    assert listing["query"] == {"topic": name}
    [topic] = listing["topics"]
    assert topic["topic"] == name and "error" not in topic
    assert [p["partition"] for p in topic["partitions"]] == [0]
    assert name in {t["topic"] for t in kcat_list(shared_server)["topics"]}


def test_kcat_unknown_topic_without_auto_creation(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "data", {"auto.create.topics.enable": "false"}).start()
    try:
        listing = kcat_list(server)  # no internal topic before its first use, as in Kafka
        assert listing["topics"] == []
        assert listing["brokers"] == [{"id": 1, "name": server.bootstrap}]
        name = unique("kcat-none")
        [topic] = kcat_list(server, "-t", name)["topics"]
        assert topic["topic"] == name
        assert "nknown" in topic.get("error", ""), topic  # Broker: Unknown topic or partition
        assert topic["partitions"] == []
    finally:
        server.stop()
