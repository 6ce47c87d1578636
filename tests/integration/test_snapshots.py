"""Snapshots on a real server process: one killed (SIGKILL) while it writes a snapshot starts
again from its previous snapshot and the log after it, with every acknowledged offset; the
half-written file is removed with a log line."""

from __future__ import annotations

from pathlib import Path

import pytest
from kafka import KafkaConsumer, TopicPartition
from kafka.admin import KafkaAdminClient, NewTopic
from kafka.structs import OffsetAndMetadata

from coordinator.runtime import partition_for
from storage import snapshot
from tests.harness import ServerProcess

GROUP = "snapshotted"
TOPIC = "orders"
PARTITIONS = 4


def commit_rounds(bootstrap: str, first: int, rounds: int) -> dict[TopicPartition, int]:
    """``rounds`` synchronous commits of every partition (kafka-python, manual assignment);
    the offsets acknowledged last."""
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=GROUP,
                             enable_auto_commit=False, request_timeout_ms=10000)
    partitions = [TopicPartition(TOPIC, p) for p in range(PARTITIONS)]
    try:
        consumer.assign(partitions)
        for n in range(first, first + rounds):
            consumer.commit({tp: OffsetAndMetadata(n * 10 + tp.partition, "", -1)
                             for tp in partitions})
    finally:
        consumer.close(autocommit=False)
    return {tp: (first + rounds - 1) * 10 + tp.partition for tp in partitions}


def committed(bootstrap: str) -> dict[TopicPartition, int | None]:
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, group_id=GROUP,
                             enable_auto_commit=False, request_timeout_ms=10000)
    try:
        return {tp: consumer.committed(tp)
                for tp in (TopicPartition(TOPIC, p) for p in range(PARTITIONS))}
    finally:
        consumer.close(autocommit=False)


@pytest.mark.slow  # three server starts, about 5 s
def test_a_server_killed_while_writing_a_snapshot_starts_from_the_previous_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    directory = tmp_path / "data" / f"__consumer_offsets-{partition_for(GROUP, 50)}"
    server = ServerProcess(tmp_path / "data", {
        "coordinator.log.max.record.bytes.between.snapshots": "2000",
        "log.cleaner.enable": "false"})
    try:
        server.start().wait_loaded()
        admin = KafkaAdminClient(bootstrap_servers=server.bootstrap, request_timeout_ms=10000)
        admin.create_topics([NewTopic(TOPIC, PARTITIONS, 1)])
        admin.close()
        commit_rounds(server.bootstrap, 0, 8)  # enough record bytes for a snapshot
        server.wait_event("snapshot_written")
        [(first_end, _)] = snapshot.snapshot_files(directory)

        # the next snapshot is held half written: the server is killed then
        monkeypatch.setenv("COORDINATOR_SNAPSHOT_WRITE_PAUSE_MS", "60000")
        server.restart().wait_loaded()
        acked = commit_rounds(server.bootstrap, 8, 8)
        paused = server.wait_event("snapshot_write_paused")
        part = Path(paused["path"])
        assert part.exists() and part.name.endswith(".snapshot.part")
        acked = commit_rounds(server.bootstrap, 16, 2)  # served meanwhile, in the tail
        server.kill()

        monkeypatch.delenv("COORDINATOR_SNAPSHOT_WRITE_PAUSE_MS")
        server.start().wait_loaded()
        assert server.event("snapshot_part_removed", path=str(part)) is not None
        assert not part.exists()
        loaded = server.event("coordinator partition loaded",
                              partition=partition_for(GROUP, 50))
        assert loaded is not None and loaded["snapshot_end_offset"] == first_end
        assert committed(server.bootstrap) == acked
    finally:
        server.stop()
        server.kill()
