"""What the server acknowledged survives: real clients commit offsets, the server is killed with
SIGKILL (and its store damaged or compacted), and after a restart every acknowledged offset is
fetched back.

Clients: kafka-python's KafkaConsumer and confluent-kafka's Consumer, each with a ``group.id``,
``assign()`` and a synchronous commit (generation -1, no member id: the manual-assignment path).
Error codes the clients hide behind retries are checked on the wire with ``WireClient``.
"""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import confluent_kafka
import pytest
from kafka import KafkaConsumer, TopicPartition
from kafka.admin import KafkaAdminClient, NewPartitions, NewTopic
from kafka.structs import OffsetAndMetadata

import protocol
import storage.dump
from coordinator.runtime import partition_for
from protocol import ErrorCode
from tests.harness import ServerProcess, wait_until
from tests.integration.conftest import WireClient, kio_class, offset_fetch_request

TOPIC = "orders"
TOPIC_PARTITIONS = 4
ROOT = Path(__file__).resolve().parents[2]

Acked = dict[tuple[str, str, int], int]
"""(group, topic, partition) -> the offset the server acknowledged last."""


# --------------------------------------------------------------------------- clients
def create_topics(bootstrap: str, topics: dict[str, int]) -> dict[str, str]:
    """Create topics through the admin API; returns their ids."""
    admin = KafkaAdminClient(bootstrap_servers=bootstrap, request_timeout_ms=10000,
                             client_id="durability-admin")
    try:
        response = admin.create_topics([NewTopic(name, count, 1)
                                        for name, count in topics.items()])
    finally:
        admin.close()
    ids = {}
    for topic in response["topics"]:
        assert topic["error_code"] == 0, topic
        ids[topic["name"]] = str(topic["topic_id"])
    return ids


def kp_consumer(bootstrap: str, group: str) -> KafkaConsumer:
    return KafkaConsumer(bootstrap_servers=bootstrap, group_id=group, enable_auto_commit=False,
                         request_timeout_ms=10000,
                         client_id=f"kp-{group}")


def kp_commit(bootstrap: str, group: str, offsets: dict[tuple[str, int], int],
              acked: Acked) -> None:
    """Commit with kafka-python; recorded as acknowledged only once commit() returned."""
    consumer = kp_consumer(bootstrap, group)
    try:
        consumer.assign([TopicPartition(t, p) for t, p in offsets])
        consumer.commit({TopicPartition(t, p): OffsetAndMetadata(o, f"kp-{o}", -1)
                         for (t, p), o in offsets.items()}, timeout_ms=10000)
    finally:
        consumer.close(autocommit=False)
    acked.update({(group, t, p): o for (t, p), o in offsets.items()})


def ck_consumer(bootstrap: str, group: str) -> confluent_kafka.Consumer:
    return confluent_kafka.Consumer({"bootstrap.servers": bootstrap, "group.id": group,
                                     "enable.auto.commit": False, "client.id": f"ck-{group}"})


def ck_commit(bootstrap: str, group: str, offsets: dict[tuple[str, int], int],
              acked: Acked) -> None:
    """Commit with confluent-kafka (synchronous); acknowledged once commit() returned clean."""
    consumer = ck_consumer(bootstrap, group)
    try:
        tps = [confluent_kafka.TopicPartition(t, p, o) for (t, p), o in offsets.items()]
        consumer.assign(tps)
        result = consumer.commit(offsets=tps, asynchronous=False)
        assert result is not None and all(tp.error is None for tp in result), result
    finally:
        consumer.close()
    acked.update({(group, t, p): o for (t, p), o in offsets.items()})


def kp_committed(bootstrap: str, group: str, tps: list[tuple[str, int]]
                 ) -> dict[tuple[str, int], int | None]:
    consumer = kp_consumer(bootstrap, group)
    try:
        return {(t, p): consumer.committed(TopicPartition(t, p), timeout_ms=10000)
                for t, p in tps}
    finally:
        consumer.close(autocommit=False)


def ck_committed(bootstrap: str, group: str, tps: list[tuple[str, int]]
                 ) -> dict[tuple[str, int], int | None]:
    consumer = ck_consumer(bootstrap, group)
    try:
        got = consumer.committed([confluent_kafka.TopicPartition(t, p) for t, p in tps],
                                 timeout=10)
    finally:
        consumer.close()
    out: dict[tuple[str, int], int | None] = {}
    for tp in got:
        assert tp.error is None, tp
        out[(tp.topic, tp.partition)] = tp.offset if tp.offset >= 0 else None
    return out


def assert_all_committed(bootstrap: str, acked: Acked) -> None:
    """Every acknowledged offset is fetched back (groups alternate between the two clients)."""
    by_group: dict[str, dict[tuple[str, int], int]] = {}
    for (group, topic, partition), offset in acked.items():
        by_group.setdefault(group, {})[(topic, partition)] = offset
    for i, (group, expected) in enumerate(sorted(by_group.items())):
        fetch = ck_committed if i % 2 else kp_committed
        got = fetch(bootstrap, group, list(expected))
        assert got == expected, f"group {group}: fetched {got}, acknowledged {expected}"


def commit_many_groups(bootstrap: str, groups: int, rounds: int = 2) -> Acked:
    """``groups`` groups (alternating clients) commit every partition of TOPIC, ``rounds``
    times each: the last round's offsets are the ones that count."""
    acked: Acked = {}
    for r in range(rounds):
        for g in range(groups):
            group = f"group-{g}"
            offsets = {(TOPIC, p): 1_000 * g + 10 * r + p for p in range(TOPIC_PARTITIONS)}
            commit = ck_commit if g % 3 == 2 else kp_commit
            commit(bootstrap, group, offsets, acked)
    return acked


# --------------------------------------------------------------------------- the store on disk
def dump(log_dir: Path, partition: int | None = None) -> list[dict[str, Any]]:
    args = [sys.executable, "-m", "coordinator", "log", "dump", "--log-dirs", str(log_dir)]
    if partition is not None:
        args += ["--partition", str(partition)]
    out = subprocess.run(args, cwd=ROOT, capture_output=True, text=True, timeout=60, check=True)
    return [json.loads(line) for line in out.stdout.splitlines()]


def records(log_dir: Path) -> list[dict[str, Any]]:
    """The store's records, read in-process (the CLI is tested in test_log_dump.py)."""
    return list(storage.dump.dump(log_dir))


def newest_segment(log_dir: Path, partition: int) -> Path:
    return sorted((log_dir / f"__consumer_offsets-{partition}").glob("*.log"))[-1]


def partitions_with_commits(log_dir: Path) -> list[int]:
    return sorted({row["partition"] for row in records(log_dir)
                   if row["type"] == "OffsetCommit"})


# --------------------------------------------------------------------------- the wire
def wire_offset_fetch(bootstrap: str, group: str, partitions: list[int],
                      client: WireClient | None = None) -> Any:
    """OffsetFetch v8 for one group's TOPIC partitions: the response's group entry."""
    request = offset_fetch_request(group, TOPIC, partitions)
    if client is not None:
        [result] = client.request(request).groups
        return result
    with WireClient(bootstrap) as own:
        [result] = own.request(request).groups
        return result


def wire_offset_commit(client: WireClient, group: str, offsets: dict[int, int]
                       ) -> dict[int, ErrorCode]:
    """OffsetCommit v8 as a manual-assignment client sends it; the error of each partition."""
    partition_cls = kio_class("offset_commit", 8, "request", "OffsetCommitRequestPartition")
    request = protocol.make(
        kio_class("offset_commit", 8, "request", "OffsetCommitRequest"),
        group_id=group, generation_id_or_member_epoch=-1, member_id="", group_instance_id=None,
        topics=(protocol.make(
            kio_class("offset_commit", 8, "request", "OffsetCommitRequestTopic"),
            name=TOPIC, partitions=tuple(
                protocol.make(partition_cls, partition_index=p, committed_offset=o,
                              committed_leader_epoch=-1, committed_metadata="")
                for p, o in offsets.items())),))
    [topic] = client.request(request).topics
    return {p.partition_index: ErrorCode(p.error_code) for p in topic.partitions}


# --------------------------------------------------------------------------- fixtures
class Servers:
    """Starts servers on one log dir and cleans up whatever is still running."""

    def __init__(self, log_dir: Path) -> None:
        self.log_dir = log_dir
        self.started: list[ServerProcess] = []

    def start(self, overrides: dict[str, str]) -> ServerProcess:
        process = ServerProcess(self.log_dir, overrides).start()
        self.started.append(process)
        return process

    def close(self) -> None:
        for process in self.started:
            process.stop()
            process.kill()


@pytest.fixture
def servers(tmp_path: Path) -> Iterator[Servers]:
    servers = Servers(tmp_path / "data")
    try:
        yield servers
    finally:
        servers.close()


def restart(servers: Servers, killed: ServerProcess) -> ServerProcess:
    """A new server on the killed one's log dir, with its configs."""
    assert not killed.alive()
    return servers.start(dict(killed.overrides))


# --------------------------------------------------------------------------- tests
@pytest.mark.slow
def test_every_acknowledged_offset_survives_sigkill(servers: Servers) -> None:
    server = servers.start({"offsets.topic.num.partitions": "10"})
    create_topics(server.bootstrap, {TOPIC: TOPIC_PARTITIONS})
    acked = commit_many_groups(server.bootstrap, groups=30)
    # the groups really are spread over the coordinator partitions
    assert len({partition_for(f"group-{g}", 10) for g in range(30)}) >= 5
    server.kill()

    server = restart(servers, server)
    assert_all_committed(server.bootstrap, acked)
    assert len(partitions_with_commits(servers.log_dir)) >= 5
    # and the restarted server keeps committing on top of what it loaded
    kp_commit(server.bootstrap, "group-0", {(TOPIC, 0): 424242}, acked)
    server.kill()
    server = restart(servers, server)
    assert_all_committed(server.bootstrap, acked)


@pytest.mark.slow
def test_a_torn_write_is_truncated_and_nothing_acknowledged_is_lost(servers: Servers) -> None:
    server = servers.start({"offsets.topic.num.partitions": "5"})
    create_topics(server.bootstrap, {TOPIC: TOPIC_PARTITIONS})
    acked = commit_many_groups(server.bootstrap, groups=12)
    server.kill()

    touched = partitions_with_commits(servers.log_dir)
    assert len(touched) >= 2
    sizes = {}
    junk = [
        b"\x00\x00\x00\x80" + b"\xde\xad" * 12,  # a batch cut short: length says 128 bytes
        b"\x00\x00\x00\x08" + b"\x00" * 8,  # whole, but too short to be a batch, bad CRC
        b"\xff" * 7,  # not even a length and a CRC
    ]
    for i, partition in enumerate(touched):
        segment = newest_segment(servers.log_dir, partition)
        sizes[partition] = segment.stat().st_size
        with segment.open("ab") as f:
            f.write(junk[i % len(junk)])

    server = restart(servers, server)
    for partition in touched:
        # defs, not lambdas, below: mypy cannot infer a lambda with a default argument
        def truncation(p: int = partition) -> dict[str, Any] | None:
            return server.event("log_tail_truncated", partition=p)

        def truncated(p: int = partition) -> bool:
            return newest_segment(servers.log_dir, p).stat().st_size == sizes[p]

        # partitions load in the background, after the server listens
        event = wait_until(truncation, timeout=10,
                           message=f"the truncation of partition {partition}")
        assert f"__consumer_offsets-{partition}" in event["segment"]
        assert event["position"] == sizes[partition]
        # (the event is logged just before the truncate)
        wait_until(truncated, timeout=5, message=f"partition {partition} truncated")
    assert_all_committed(server.bootstrap, acked)
    # the truncated logs take new commits, which survive the next crash too
    for g in range(12):
        kp_commit(server.bootstrap, f"group-{g}", {(TOPIC, 1): 5_000 + g}, acked)
    server.kill()
    server = restart(servers, server)
    assert_all_committed(server.bootstrap, acked)  # every partition with commits has loaded
    assert server.count("log_tail_truncated") == 0


@pytest.mark.slow
def test_offsets_survive_compaction_and_sigkill(servers: Servers) -> None:
    server = servers.start({"offsets.topic.num.partitions": "2",
                            "offsets.topic.segment.bytes": "4096",
                            "log.cleaner.backoff.ms": "200"})
    create_topics(server.bootstrap, {TOPIC: TOPIC_PARTITIONS})
    groups = ["compacted-a", "compacted-b", "compacted-c"]
    acked: Acked = {}
    written = 0
    consumers = {group: kp_consumer(server.bootstrap, group) for group in groups}
    try:
        for consumer in consumers.values():
            consumer.assign([TopicPartition(TOPIC, p) for p in range(TOPIC_PARTITIONS)])
        for r in range(80):
            for g, (group, consumer) in enumerate(consumers.items()):
                offsets = {p: 100_000 * g + 10 * r + p for p in range(TOPIC_PARTITIONS)}
                consumer.commit({TopicPartition(TOPIC, p): OffsetAndMetadata(o, "", -1)
                                 for p, o in offsets.items()}, timeout_ms=10000)
                acked.update({(group, TOPIC, p): o for p, o in offsets.items()})
                written += len(offsets)
    finally:
        for consumer in consumers.values():
            consumer.close(autocommit=False)

    def compacted() -> bool:
        return any(e.get("event") == "log_compacted" and e["records_after"] < e["records_before"]
                   for e in list(server.events))

    wait_until(compacted, timeout=15, message="a log_compacted event that dropped records")
    server.kill()

    rows = [row for row in dump(servers.log_dir) if row["type"] == "OffsetCommit"]
    assert len(rows) < written
    # whatever compaction kept, the newest record of every key is the acknowledged offset
    newest: dict[tuple[str, str, int], tuple[int, int]] = {}
    for row in rows:
        key = (row["key"]["group"], row["key"]["topic"], row["key"]["partition"])
        if key not in newest or row["offset"] > newest[key][0]:
            newest[key] = (row["offset"], row["value"]["offset"])
    assert {key: value for key, (_offset, value) in newest.items()} == acked

    server = restart(servers, server)
    assert_all_committed(server.bootstrap, acked)


@pytest.mark.slow
def test_corruption_in_the_middle_stops_only_its_partition(servers: Servers) -> None:
    server = servers.start({"offsets.topic.num.partitions": "4"})
    create_topics(server.bootstrap, {TOPIC: TOPIC_PARTITIONS})
    acked = commit_many_groups(server.bootstrap, groups=12)
    server.kill()

    counts: dict[int, int] = {}
    for row in records(servers.log_dir):
        counts[row["partition"]] = counts.get(row["partition"], 0) + 1
    broken = max(counts, key=lambda p: counts[p])
    segment = sorted((servers.log_dir / f"__consumer_offsets-{broken}").glob("*.log"))[0]
    data = bytearray(segment.read_bytes())
    data[40] ^= 0xFF  # inside the first batch; the batches after it are intact
    segment.write_bytes(bytes(data))

    server = restart(servers, server)
    failed = server.wait_event("coordinator partition failed to load", partition=broken)
    assert "corrupt" in failed["error"] and str(segment) in failed["error"]
    assert segment.read_bytes() == bytes(data)  # nothing repaired by guessing

    broken_groups = sorted({g for g, _t, _p in acked if partition_for(g, 4) == broken})
    healthy = {k: v for k, v in acked.items() if partition_for(k[0], 4) != broken}
    assert broken_groups and healthy
    for group in broken_groups:
        result = wire_offset_fetch(server.bootstrap, group, [0, 1])
        assert ErrorCode(result.error_code) is ErrorCode.coordinator_not_available
        with WireClient(server.bootstrap) as client:
            assert set(wire_offset_commit(client, group, {0: 1}).values()) == {
                ErrorCode.coordinator_not_available}
    # the other partitions serve their groups as before, reads and writes
    assert server.alive()
    assert_all_committed(server.bootstrap, healthy)
    healthy_group = sorted({k[0] for k in healthy})[0]
    kp_commit(server.bootstrap, healthy_group, {(TOPIC, 2): 77}, healthy)
    assert_all_committed(server.bootstrap, healthy)


@pytest.mark.slow
def test_topics_created_through_the_admin_api_keep_their_ids(servers: Servers) -> None:
    server = servers.start({"offsets.topic.num.partitions": "3"})
    ids = create_topics(server.bootstrap, {"kept": 3, "grown": 1, "dropped": 2})
    admin = KafkaAdminClient(bootstrap_servers=server.bootstrap, request_timeout_ms=10000)
    try:
        admin.create_partitions({"grown": NewPartitions(total_count=5)})
        admin.delete_topics(["dropped"])
    finally:
        admin.close()
    server.kill()

    server = restart(servers, server)
    admin = KafkaAdminClient(bootstrap_servers=server.bootstrap, request_timeout_ms=10000)
    try:
        assert set(admin.list_topics()) >= {"kept", "grown"}
        assert "dropped" not in admin.list_topics()
        described = {t["name"]: t for t in admin.describe_topics(["kept", "grown"])}
    finally:
        admin.close()
    for name, partitions in (("kept", 3), ("grown", 5)):
        assert described[name]["error_code"] == 0
        assert str(described[name]["topic_id"]) == ids[name]
        assert len(described[name]["partitions"]) == partitions
    # and commits to the restored topics are accepted
    acked: Acked = {}
    kp_commit(server.bootstrap, "after-restart", {("grown", 4): 12}, acked)
    assert kp_committed(server.bootstrap, "after-restart", [("grown", 4)]) == {("grown", 4): 12}
