"""Kafka's internal topics as Kafka shows them: listed by Metadata with the internal flag and the
store's partition count, never auto-created, refused to Produce and CreateTopics, and readable
with Fetch and ListOffsets in Kafka's record serialization (what kcat and lag checkers read)."""

from __future__ import annotations

import datetime
import shutil
import struct
import subprocess
import time
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import (
    Consumer,
    ConsumerGroupTopicPartitions,
    KafkaException,
    Producer,
    TopicPartition,
)
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, OffsetAndMetadata
from kafka import TopicPartition as KafkaTopicPartition

import protocol
from protocol import ErrorCode
from protocol.header import read_uvarint
from tests.harness import ServerProcess, wait_until
from tests.integration.conftest import WireClient, kio_class
from tests.integration.share_clients import set_group_configs

KCAT = shutil.which("kcat")
INTERNAL = {"__consumer_offsets", "__transaction_state", "__share_group_state"}


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = ServerProcess(tmp_path_factory.mktemp("internal") / "data",
                            {"group.initial.rebalance.delay.ms": "0"}).start()
    try:
        yield process
    finally:
        process.stop()
        process.kill()


def kcat_records(server: ServerProcess, topic: str, *extra: str
                 ) -> list[tuple[int, int, bytes, bytes | None]]:
    """(partition, offset, key, value) of every record kcat reads from ``topic``."""
    assert KCAT is not None, "kcat is installed by the Makefile's SYSTEM_DEPS"
    done = subprocess.run([KCAT, "-b", server.bootstrap, "-C", "-t", topic, "-e", "-q",
                           "-f", "%p %o %K %S\n%k%s", *extra],
                          capture_output=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    out, data, pos = [], done.stdout, 0
    while pos < len(data):
        end = data.index(b"\n", pos)
        partition, offset, key_size, value_size = (int(x) for x in data[pos:end].split())
        pos = end + 1
        key = data[pos:pos + max(key_size, 0)]
        pos += max(key_size, 0)
        value = None if value_size < 0 else data[pos:pos + value_size]
        pos += max(value_size, 0)
        out.append((partition, offset, key, value))
    return out


def _string(data: bytes, pos: int) -> tuple[str, int]:
    (size,) = struct.unpack_from(">h", data, pos)
    return data[pos + 2:pos + 2 + size].decode(), pos + 2 + size


def offset_commit(key: bytes, value: bytes | None) -> tuple[str, str, int, int] | None:
    """(group, topic, partition, offset) of an OffsetCommit record in Kafka's format (key
    version 1, value v1 or v3), as Burrow decodes it; None for other records."""
    (version,) = struct.unpack_from(">h", key, 0)
    if version not in (0, 1) or value is None:
        return None
    group, pos = _string(key, 2)
    topic, pos = _string(key, pos)
    (partition,) = struct.unpack_from(">i", key, pos)
    value_version, offset = struct.unpack_from(">hq", value, 0)
    assert value_version in (1, 3)
    return group, topic, partition, offset


def consume_and_commit(server: ServerProcess, group: str, topic: str, count: int) -> None:
    consumer = Consumer({"bootstrap.servers": server.bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    try:
        consumer.subscribe([topic])
        got = 0
        deadline = time.monotonic() + 30
        while got < count and time.monotonic() < deadline:
            message = consumer.poll(0.5)
            if message is not None and message.error() is None:
                got += 1
        assert got == count
        consumer.commit(asynchronous=False)
    finally:
        consumer.close()


def offsets_watermarks(server: ServerProcess, partition: int) -> tuple[int, int]:
    """(low, high) watermark of a ``__consumer_offsets`` partition (ListOffsets)."""
    reader = Consumer({"bootstrap.servers": server.bootstrap, "group.id": "watermarks"})
    try:
        low, high = reader.get_watermark_offsets(TopicPartition("__consumer_offsets", partition),
                                                 timeout=10)
        return int(low), int(high)
    finally:
        reader.close()


def produce(server: ServerProcess, topic: str, count: int) -> None:
    producer = Producer({"bootstrap.servers": server.bootstrap})
    for i in range(count):
        producer.produce(topic, b"value-%d" % i)
    assert producer.flush(15) == 0


def listed(admin: AdminClient, *names: str) -> dict[str, int]:
    """The internal topics a Metadata request lists (all topics, or just ``names``), with
    their partition counts."""
    if names:
        topics = {n: admin.list_topics(n, timeout=10).topics[n] for n in names}
    else:
        topics = admin.list_topics(timeout=10).topics
    return {name: len(t.partitions) for name, t in topics.items()
            if name in INTERNAL and t.error is None}


def test_each_internal_topic_is_created_on_first_use_as_kafka_creates_it(
        tmp_path: Path) -> None:
    process = ServerProcess(tmp_path / "data", {}).start().wait_loaded()
    try:
        admin = AdminClient({"bootstrap.servers": process.bootstrap})
        assert listed(admin) == {}  # a new cluster has none yet
        # FindCoordinator for a group creates __consumer_offsets (50 partitions:
        # offsets.topic.num.partitions), and only that one
        admin.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions("first-use")])["first-use"].result(10)
        assert listed(admin) == {"__consumer_offsets": 50}
        # a transactional producer's FindCoordinator creates __transaction_state
        producer = Producer({"bootstrap.servers": process.bootstrap,
                             "transactional.id": "first-use-txn"})
        producer.init_transactions(10)
        assert listed(admin) == {"__consumer_offsets": 50, "__transaction_state": 50}
        # a Metadata request naming one, with auto-creation on, creates it as internal
        assert listed(admin, "__share_group_state") == {"__share_group_state": 50}
        assert listed(admin) == dict.fromkeys(INTERNAL, 50)
        created = admin.create_topics([NewTopic("__consumer_offsets", 1, 1)])
        with pytest.raises(KafkaException) as refused:
            created["__consumer_offsets"].result(10)
        assert refused.value.args[0].name() == "TOPIC_ALREADY_EXISTS"
    finally:
        process.stop()
        process.kill()


def test_an_internal_topic_is_not_created_by_metadata_without_auto_creation(
        tmp_path: Path) -> None:
    process = ServerProcess(tmp_path / "data", {"auto.create.topics.enable": "false"}).start()
    try:
        admin = AdminClient({"bootstrap.servers": process.bootstrap})
        assert listed(admin, "__consumer_offsets") == {}
        assert listed(admin) == {}
    finally:
        process.stop()
        process.kill()


def test_produce_to_an_internal_topic_is_refused(server: ServerProcess) -> None:
    errors: list[str] = []
    producer = Producer({"bootstrap.servers": server.bootstrap, "message.timeout.ms": 5000})
    producer.produce("__consumer_offsets", b"x", partition=0,
                     on_delivery=lambda err, msg: errors.append(err.name() if err else "ok"))
    producer.flush(10)
    assert errors == ["TOPIC_EXCEPTION"]  # librdkafka's name of INVALID_TOPIC_EXCEPTION (17)


@pytest.mark.slow
def test_kcat_lists_a_groups_offset_commits(server: ServerProcess) -> None:
    topic, group = f"orders-{uuid.uuid4().hex[:6]}", f"lagged-{uuid.uuid4().hex[:6]}"
    produce(server, topic, 7)
    consume_and_commit(server, group, topic, 7)

    def commits() -> list[tuple[int, int, tuple[str, str, int, int]]]:
        found = []
        for partition, offset, key, value in kcat_records(server, "__consumer_offsets"):
            decoded = offset_commit(key, value)
            if decoded is not None and decoded[0] == group:
                found.append((partition, offset, decoded))
        return found

    found = wait_until(commits, timeout=15, message="the group's commit in __consumer_offsets")
    assert [decoded for _, _, decoded in found] == [(group, topic, 0, 7)]
    # on the group's coordinator partition, which ListOffsets bounds
    partition, offset, _ = found[0]
    low, high = offsets_watermarks(server, partition)
    assert low == 0 and low <= offset < high


def test_a_consumer_reads_the_latest_commit_of_each_partition_after_recommits(
        server: ServerProcess) -> None:
    """What the cleaner leaves is what a reader sees: the latest value of every key."""
    topic, group = f"again-{uuid.uuid4().hex[:6]}", f"again-{uuid.uuid4().hex[:6]}"
    produce(server, topic, 3)
    consume_and_commit(server, group, topic, 3)
    produce(server, topic, 2)
    consume_and_commit(server, group, topic, 2)

    def latest() -> dict[tuple[str, int], int]:
        seen: dict[tuple[str, int], int] = {}
        for _, _, key, value in kcat_records(server, "__consumer_offsets"):
            decoded = offset_commit(key, value)
            if decoded is not None and decoded[0] == group:
                seen[(decoded[1], decoded[2])] = decoded[3]
        return seen if seen.get((topic, 0)) == 5 else {}

    assert wait_until(latest, timeout=15) == {(topic, 0): 5}


def test_transaction_state_holds_a_transactional_producers_state(server: ServerProcess) -> None:
    txn = f"txn-{uuid.uuid4().hex[:6]}"
    producer = Producer({"bootstrap.servers": server.bootstrap, "transactional.id": txn})
    producer.init_transactions(15)
    producer.begin_transaction()
    producer.produce(f"txn-topic-{txn}", b"in a transaction")
    producer.commit_transaction(15)

    def states() -> list[int]:
        found = []
        for _, _, key, value in kcat_records(server, "__transaction_state"):
            (version,) = struct.unpack_from(">h", key, 0)
            name, _ = _string(key, 2)
            if version == 0 and name == txn and value is not None:
                value_version, _producer_id, _epoch, _timeout, status = struct.unpack_from(
                    ">hqhib", value, 0)
                assert value_version == 0
                found.append(status)
        return found if found and found[-1] == 4 else []

    statuses = wait_until(states, timeout=15, message="CompleteCommit in __transaction_state")
    assert statuses[-1] == 4 and 0 in statuses  # Empty ... CompleteCommit


def test_transactional_offset_commits_appear_once_committed(server: ServerProcess) -> None:
    """A read_committed reader of __consumer_offsets (kcat's isolation level) sees a
    transaction's offset commit once it commits, and an aborted one never."""
    topic, group = f"eos-{uuid.uuid4().hex[:6]}", f"eos-{uuid.uuid4().hex[:6]}"
    produce(server, topic, 4)
    consumer = Consumer({"bootstrap.servers": server.bootstrap, "group.id": group,
                         "auto.offset.reset": "earliest", "enable.auto.commit": False})
    producer = Producer({"bootstrap.servers": server.bootstrap,
                         "transactional.id": f"tx-{group}"})
    try:
        consumer.subscribe([topic])
        deadline = time.monotonic() + 30
        while not consumer.assignment() and time.monotonic() < deadline:
            consumer.poll(0.5)
        producer.init_transactions(15)
        for offset, commit in ((2, False), (3, True)):
            producer.begin_transaction()
            producer.send_offsets_to_transaction([TopicPartition(topic, 0, offset)],
                                                 consumer.consumer_group_metadata(), 15)
            if commit:
                producer.commit_transaction(15)
            else:
                producer.abort_transaction(15)
    finally:
        consumer.close()

    def committed() -> list[int]:
        found = [decoded[3] for _, _, key, value in kcat_records(
                     server, "__consumer_offsets", "-X", "isolation.level=read_committed")
                 if (decoded := offset_commit(key, value)) is not None and decoded[0] == group]
        return found if 3 in found else []

    assert wait_until(committed, timeout=15) == [3]  # never the aborted 2


@pytest.mark.slow
def test_a_reader_after_compaction_sees_every_keys_latest_commit(tmp_path: Path) -> None:
    """What the cleaner leaves is what a reader sees: after compaction dropped records, reading
    ``__consumer_offsets`` from its start gives every partition's latest commit, and fewer
    records than were written."""
    process = ServerProcess(tmp_path / "data", {
        "offsets.topic.num.partitions": "2", "offsets.topic.segment.bytes": "4096",
        "log.cleaner.backoff.ms": "200"}).start().wait_loaded()
    try:
        topic = f"compacted-{uuid.uuid4().hex[:6]}"
        admin = AdminClient({"bootstrap.servers": process.bootstrap})
        admin.create_topics([NewTopic(topic, 3, 1)])[topic].result(10)
        consumer = KafkaConsumer(bootstrap_servers=process.bootstrap, group_id="compacted",
                                 enable_auto_commit=False)
        try:
            partitions = [KafkaTopicPartition(topic, p) for p in range(3)]
            consumer.assign(partitions)
            for r in range(120):
                consumer.commit({tp: OffsetAndMetadata(10 * r + tp.partition, "", -1)
                                 for tp in partitions}, timeout_ms=10000)
        finally:
            consumer.close(autocommit=False)

        def compacted() -> bool:
            return any(e.get("event") == "log_compacted"
                       and e["records_after"] < e["records_before"] for e in process.events)

        wait_until(compacted, timeout=20, message="a compaction that dropped records")
        commits = [decoded for _, _, key, value in kcat_records(process, "__consumer_offsets")
                   if (decoded := offset_commit(key, value)) is not None]
        latest = {(t, p): offset for _, t, p, offset in commits}
        assert latest == {(topic, p): 10 * 119 + p for p in range(3)}
        assert len(commits) < 120 * 3
    finally:
        process.stop()
        process.kill()


@pytest.mark.slow
def test_restart_keeps_the_internal_topics(tmp_path: Path) -> None:
    process = ServerProcess(tmp_path / "data", {}).start().wait_loaded()
    try:
        admin = AdminClient({"bootstrap.servers": process.bootstrap})
        admin.list_consumer_group_offsets(
            [ConsumerGroupTopicPartitions("restart")])["restart"].result(10)
        before = admin.list_topics(timeout=10).topics["__consumer_offsets"]
        process.restart()
        admin = AdminClient({"bootstrap.servers": process.bootstrap})
        after = admin.list_topics(timeout=10).topics["__consumer_offsets"]
        assert len(after.partitions) == len(before.partitions) == 50
    finally:
        process.stop()
        process.kill()


def share_state(key: bytes, value: bytes | None) -> tuple[str, uuid.UUID, int, int, int,
                                                          list[tuple[int, int, int]]] | None:
    """(group, topic id, partition, record type, start offset, [(first, last, delivery state)])
    of a ShareSnapshot (type 0) or ShareUpdate (type 1) record of ``__share_group_state``, read
    by Kafka's schemas (non-flexible key; flexible v0 value, read to its last byte)."""
    (kind,) = struct.unpack_from(">h", key)
    group, pos = _string(key, 2)
    topic_id = uuid.UUID(bytes=key[pos:pos + 16])
    (partition,) = struct.unpack_from(">i", key, pos + 16)
    assert pos + 20 == len(key) and kind in (0, 1)
    if value is None:
        return None
    version, _snapshot_epoch = struct.unpack_from(">hi", value)
    assert version == 0
    pos = 6 + (4 if kind == 0 else 0)  # ShareSnapshot: the state epoch; then the leader epoch
    (start,) = struct.unpack_from(">q", value, pos + 4)
    pos += 12 + (16 if kind == 0 else 0)  # ShareSnapshot: create and write timestamps
    count, pos = read_uvarint(value, pos)
    batches = []
    for _ in range(count - 1):
        first, last, state, _delivery_count = struct.unpack_from(">qqbh", value, pos)
        tags, pos = read_uvarint(value, pos + 19)
        assert tags == 0
        batches.append((first, last, state))
    tags, pos = read_uvarint(value, pos)
    for _ in range(tags):
        _, pos = read_uvarint(value, pos)
        size, pos = read_uvarint(value, pos)
        pos += size
    assert pos == len(value)
    return group, topic_id, partition, kind, start, batches


@pytest.mark.slow
def test_share_group_state_holds_a_share_groups_acknowledgements(server: ServerProcess) -> None:
    from confluent_kafka import AcknowledgeType, ShareConsumer

    topic, group = f"jobs-{uuid.uuid4().hex[:6]}", f"sharers-{uuid.uuid4().hex[:6]}"
    produce(server, topic, 5)
    set_group_configs(server.bootstrap, group, {"share.auto.offset.reset": "earliest"})
    consumer = ShareConsumer({"bootstrap.servers": server.bootstrap, "group.id": group,
                              "share.acknowledgement.mode": "explicit", "log_level": 0})
    try:
        consumer.subscribe([topic])
        seen: set[int] = set()
        deadline = time.monotonic() + 30
        while len(seen) < 5 and time.monotonic() < deadline:
            for message in consumer.poll(0.2):
                if message.error() is None:
                    consumer.acknowledge(message, AcknowledgeType.ACCEPT)
                    seen.add(int(message.offset() or 0))
            if seen:
                consumer.commit_sync(15.0)
        assert seen == set(range(5))
    finally:
        consumer.close()

    def acknowledged() -> bool:
        start, states = 0, dict[int, int]()
        for _, _, key, value in kcat_records(server, "__share_group_state"):
            state = share_state(key, value)
            if state is None or state[0] != group or state[2] != 0:
                continue
            _, _, _, kind, record_start, batches = state
            if kind == 0:  # a snapshot replaces what came before
                start, states = record_start, {}
            elif record_start != -1:
                start = record_start
            for first, last, delivery_state in batches:
                states.update(dict.fromkeys(range(first, last + 1), delivery_state))
        return all(offset < start or states.get(offset) == 2 for offset in range(5))

    wait_until(acknowledged, timeout=20, message="the acknowledgements in __share_group_state")



def _fetch_at(topic: str, partition: int, offset: int, max_wait_ms: int) -> object:
    cls = kio_class("fetch", 12, "request", "FetchRequest")
    topic_cls = kio_class("fetch", 12, "request", "FetchTopic")
    part_cls = kio_class("fetch", 12, "request", "FetchPartition")
    return protocol.make(
        cls, replica_id=-1, max_wait=datetime.timedelta(milliseconds=max_wait_ms),
        min_bytes=1, max_bytes=1 << 20, isolation_level=0, session_id=0, session_epoch=-1,
        forgotten_topics_data=(), rack_id="",
        topics=(protocol.make(topic_cls, topic=topic, partitions=(
            protocol.make(part_cls, partition=partition, fetch_offset=offset,
                          current_leader_epoch=-1, last_fetched_epoch=-1, log_start_offset=-1,
                          partition_max_bytes=1 << 20),)),))


def test_a_long_poll_on_consumer_offsets_returns_when_a_commit_arrives(
        server: ServerProcess) -> None:
    """A Fetch waiting (max_wait 30 s) at the end of a group's ``__consumer_offsets`` partition
    is answered once the group's next commit is durable, not when its wait runs out."""
    topic, group = f"polled-{uuid.uuid4().hex[:6]}", f"waker-{uuid.uuid4().hex[:6]}"
    produce(server, topic, 3)
    consume_and_commit(server, group, topic, 3)
    [partition] = wait_until(lambda: {p for p, _, key, value in kcat_records(
        server, "__consumer_offsets") if (offset_commit(key, value) or ("",))[0] == group},
        timeout=15, message="the group's partition")
    _, end = offsets_watermarks(server, partition)
    with WireClient(server.bootstrap, timeout=60) as wire:
        fetch = _fetch_at("__consumer_offsets", partition, end, max_wait_ms=30_000)
        correlation = wire.send(fetch)
        committer = Consumer({"bootstrap.servers": server.bootstrap, "group.id": group,
                              "enable.auto.commit": False})
        try:
            started = time.monotonic()
            committer.commit(offsets=[TopicPartition(topic, 0, 1)], asynchronous=False)
        finally:
            committer.close()
        got, response = wire.recv(int(protocol.ApiKey.FETCH), 12)
        waited = time.monotonic() - started
    assert got == correlation
    answered = response.responses[0].partitions[0]
    assert answered.error_code == ErrorCode.none and answered.records
    assert waited < 15, f"answered after {waited:.1f} s: the fetch waited out max_wait"
