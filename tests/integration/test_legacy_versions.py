"""The request versions Kafka 3.9 served and 4.0 removed (KIP-896), served as Kafka 3.9 does by
default, and refused as Kafka 4.x does with ``legacy.request.versions.enable=false``.

Requests are encoded by kafka-python's message classes (every version of Kafka's schemas) and
its record classes (message formats v0 and v1), or sent by kafka-python's clients pinned to old
broker versions; the server is a real process.
"""

from __future__ import annotations

import shutil
import struct
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from kafka import KafkaConsumer, KafkaProducer, TopicPartition
from kafka.protocol.admin.configs import DescribeConfigsRequest, DescribeConfigsResponse
from kafka.protocol.admin.topics import (
    CreateTopicsRequest,
    CreateTopicsResponse,
    DeleteTopicsRequest,
    DeleteTopicsResponse,
)
from kafka.protocol.consumer import OffsetCommitRequest, OffsetFetchRequest
from kafka.protocol.consumer.fetch import FetchRequest, FetchResponse
from kafka.protocol.consumer.group import (
    JoinGroupRequest,
    JoinGroupResponse,
    OffsetCommitResponse,
    OffsetFetchResponse,
    SyncGroupRequest,
    SyncGroupResponse,
)
from kafka.protocol.consumer.offsets import ListOffsetsRequest, ListOffsetsResponse
from kafka.protocol.producer.produce import ProduceRequest, ProduceResponse
from kafka.record.legacy_records import LegacyRecordBatchBuilder
from kafka.record.memory_records import MemoryRecords

from tests.harness import ServerProcess, wait_until
from tests.integration.conftest import WireClient, api_versions_v0

_SIZE = struct.Struct(">i")
TOPIC = "legacy-orders"
KCAT = shutil.which("kcat")
OLD_LIBRDKAFKA = ("-X", "api.version.request=false", "-X", "broker.version.fallback=0.9.0")
"""librdkafka as a client of Kafka 0.9: Produce v1 (message format v0), Fetch v1, ListOffsets
v0, JoinGroup v0, no ApiVersions."""


def old_request(client: WireClient, message: Any, version: int, response_class: Any) -> Any:
    """Send a kafka-python request at ``version`` and decode its answer at that version."""
    cid = client.next_correlation_id()
    message.with_header(correlation_id=cid, client_id="legacy-test")
    body = bytes(message.encode(version=version, header=True))
    client.send_raw(_SIZE.pack(len(body)) + body)
    frame = client.recv_frame()
    assert _SIZE.unpack_from(frame, 0)[0] == cid
    return response_class.decode(frame[4:], version=version)


def committed_when_loaded(client: WireClient, message: Any, version: int) -> Any:
    """OffsetCommit's answer once the group's partition has loaded (the server has just started:
    COORDINATOR_LOAD_IN_PROGRESS until then, which clients retry)."""
    answers: list[Any] = []

    def answered() -> bool:
        answers.append(old_request(client, message, version, OffsetCommitResponse))
        return answers[-1].topics[0].partitions[0].error_code != 14

    wait_until(answered, timeout=15)
    return answers[-1]


def message_set(magic: int, values: list[bytes]) -> bytes:
    builder = LegacyRecordBatchBuilder(magic=magic, compression_type=0, batch_size=1 << 20)
    for i, value in enumerate(values):
        builder.append(i, 1_700_000_000_000 + i, b"key-%d" % i, value)
    return bytes(builder.build())


def produce(values: list[bytes], magic: int) -> Any:
    topic = ProduceRequest.TopicProduceData
    return ProduceRequest(acks=1, timeout_ms=5000, topic_data=[topic(
        name=TOPIC, partition_data=[topic.PartitionProduceData(
            index=0, records=message_set(magic, values))])])


def fetch(offset: int) -> Any:
    topic = FetchRequest.FetchTopic
    return FetchRequest(replica_id=-1, max_wait_ms=100, min_bytes=1, max_bytes=1 << 20, topics=[
        topic(topic=TOPIC, partitions=[topic.FetchPartition(partition=0, fetch_offset=offset,
                                                            partition_max_bytes=1 << 20)])])


def commit(group: str, generation: int, member: str, offset: int, stamp: int) -> Any:
    topic = OffsetCommitRequest.OffsetCommitRequestTopic
    return OffsetCommitRequest(
        group_id=group, generation_id_or_member_epoch=generation, member_id=member,
        topics=[topic(name=TOPIC, partitions=[topic.OffsetCommitRequestPartition(
            partition_index=0, committed_offset=offset, commit_timestamp=stamp,
            committed_metadata="legacy")])])


def fetch_offsets(group: str) -> Any:
    topic = OffsetFetchRequest.OffsetFetchRequestTopic
    return OffsetFetchRequest(group_id=group, topics=[topic(name=TOPIC, partition_indexes=[0])])


def list_offsets(timestamp: int) -> Any:
    topic = ListOffsetsRequest.ListOffsetsTopic
    return ListOffsetsRequest(replica_id=-1, topics=[topic(name=TOPIC, partitions=[
        topic.ListOffsetsPartition(partition_index=0, timestamp=timestamp, max_num_offsets=1)])])


def create_topic(name: str) -> Any:
    topic = CreateTopicsRequest.CreatableTopic
    return CreateTopicsRequest(topics=[topic(name=name, num_partitions=1, replication_factor=1,
                                             assignments=[], configs=[])], timeout_ms=5000)


def records_of(data: bytes) -> list[tuple[int, int, bytes | None]]:
    """(offset, magic, value) of each record of a message set."""
    out: list[tuple[int, int, bytes | None]] = []
    records = MemoryRecords(data)
    while records.has_next():
        batch = records.next_batch()
        if batch is None:
            break
        out.extend((record.offset, batch.magic, record.value) for record in batch)
    return out


def _server(tmp_path: Path, legacy: bool) -> Iterator[ServerProcess]:
    process = ServerProcess(tmp_path / "data", {
        "legacy.request.versions.enable": str(legacy).lower(),
        "group.initial.rebalance.delay.ms": "0"}).start()
    try:
        yield process
    finally:
        process.stop()
        process.kill()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[ServerProcess]:
    yield from _server(tmp_path, True)


@pytest.fixture
def kafka4(tmp_path: Path) -> Iterator[ServerProcess]:
    yield from _server(tmp_path, False)


def test_api_versions_advertises_kafka_3_9_oldest_versions(server: ServerProcess) -> None:
    with WireClient(server.bootstrap) as client:
        ranges = {k.api_key: (k.min_version, k.max_version)
                  for k in client.request(api_versions_v0()).api_keys}
    assert ranges[0][0] == 0 and ranges[1][0] == 0 and ranges[2][0] == 0
    assert ranges[8][0] == 0 and ranges[9][0] == 0 and ranges[19][0] == 0
    assert ranges[20][0] == 0 and ranges[32][0] == 0


@pytest.mark.slow
def test_raw_old_versions_produce_commit_and_consume(server: ServerProcess) -> None:
    with WireClient(server.bootstrap) as client:
        created = old_request(client, create_topic(TOPIC), 0, CreateTopicsResponse)
        assert [(t.name, t.error_code) for t in created.topics] == [(TOPIC, 0)]
        again = old_request(client, create_topic(TOPIC), 1, CreateTopicsResponse)
        assert again.topics[0].error_code == 36  # TOPIC_ALREADY_EXISTS, with v1's message
        assert again.topics[0].error_message
        # Produce v0 (magic 0), v1 (magic 0) and v2 (magic 1): up-converted, offsets in order
        bases = []
        for version, magic in ((0, 0), (1, 0), (2, 1)):
            answer = old_request(client, produce([b"v%d-a" % version, b"v%d-b" % version],
                                                 magic), version, ProduceResponse)
            partition = answer.responses[0].partition_responses[0]
            assert partition.error_code == 0
            bases.append(partition.base_offset)
        assert bases == [0, 2, 4]
        # Fetch v0 answers magic 0, Fetch v2 magic 1 with the producer's timestamps
        for version, magic in ((0, 0), (1, 0), (2, 1), (3, 1)):
            answer = old_request(client, fetch(1), version, FetchResponse)
            partition = answer.responses[0].partitions[0]
            assert partition.error_code == 0 and partition.high_watermark == 6
            got = records_of(partition.records)
            assert [offset for offset, _, _ in got] == [1, 2, 3, 4, 5]
            assert {m for _, m, _ in got} == {magic}
            assert got[-1][2] == b"v2-b"
        # ListOffsets v0: the old offset list
        latest = old_request(client, list_offsets(-1), 0, ListOffsetsResponse)
        assert latest.topics[0].partitions[0].old_style_offsets == [6]
        earliest = old_request(client, list_offsets(-2), 0, ListOffsetsResponse)
        assert earliest.topics[0].partitions[0].old_style_offsets == [0]
        # OffsetCommit v0 (no generation) and v1 (with one, and a commit timestamp)
        committed = committed_when_loaded(client, commit("simple", -1, "", 3, -1), 0)
        assert committed.topics[0].partitions[0].error_code == 0
        fetched = old_request(client, fetch_offsets("simple"), 0, OffsetFetchResponse)
        assert fetched.topics[0].partitions[0].committed_offset == 3
        stamped = old_request(client, commit("simple", -1, "", 5, 1_600_000_000_000), 1,
                              OffsetCommitResponse)
        assert stamped.topics[0].partitions[0].error_code == 0
        fetched = old_request(client, fetch_offsets("simple"), 0, OffsetFetchResponse)
        assert fetched.topics[0].partitions[0].committed_offset == 5
        assert fetched.topics[0].partitions[0].metadata == "legacy"
        # a generation for a group that does not exist: ILLEGAL_GENERATION, as before v9
        refused = committed_when_loaded(client, commit("nobody", 4, "m", 1, -1), 1)
        assert refused.topics[0].partitions[0].error_code == 22
        deleted = old_request(client, DeleteTopicsRequest(topic_names=[TOPIC], timeout_ms=5000),
                              0, DeleteTopicsResponse)
        assert [(r.name, r.error_code) for r in deleted.responses] == [(TOPIC, 0)]


@pytest.mark.slow
def test_classic_group_commits_with_offset_commit_v1_and_consumes_with_fetch_v2(
        server: ServerProcess) -> None:
    """A client of Kafka 0.10.0's versions: JoinGroup v0, SyncGroup v0, OffsetCommit v1 with the
    generation and a commit timestamp, OffsetFetch v0, Fetch v2 from the committed offset."""
    with WireClient(server.bootstrap) as client:
        assert old_request(client, create_topic(TOPIC), 0,
                           CreateTopicsResponse).topics[0].error_code == 0
        old_request(client, produce([b"a", b"b", b"c", b"d"], 1), 2, ProduceResponse)
        protocol = JoinGroupRequest.JoinGroupRequestProtocol(name="range", metadata=b"")

        def joined() -> Any:
            answer = old_request(client, JoinGroupRequest(
                group_id="old-group", session_timeout_ms=10000, member_id="",
                protocol_type="consumer", protocols=[protocol]), 0, JoinGroupResponse)
            return answer if answer.error_code == 0 else None

        join = wait_until(joined, timeout=15, message="JoinGroup v0 answered")
        assert join.leader == join.member_id and join.generation_id >= 1
        sync = old_request(client, SyncGroupRequest(
            group_id="old-group", generation_id=join.generation_id, member_id=join.member_id,
            assignments=[SyncGroupRequest.SyncGroupRequestAssignment(
                member_id=join.member_id, assignment=b"")]), 0, SyncGroupResponse)
        assert sync.error_code == 0
        stale = old_request(client, commit("old-group", join.generation_id + 1, join.member_id,
                                           2, -1), 1, OffsetCommitResponse)
        assert stale.topics[0].partitions[0].error_code == 22  # ILLEGAL_GENERATION
        done = old_request(client, commit("old-group", join.generation_id, join.member_id, 2,
                                          1_650_000_000_000), 1, OffsetCommitResponse)
        assert done.topics[0].partitions[0].error_code == 0
        fetched = old_request(client, fetch_offsets("old-group"), 0, OffsetFetchResponse)
        start = fetched.topics[0].partitions[0].committed_offset
        assert start == 2
        answer = old_request(client, fetch(start), 2, FetchResponse)
        got = records_of(answer.responses[0].partitions[0].records)
        assert [(offset, magic, value) for offset, magic, value in got] == [
            (2, 1, b"c"), (3, 1, b"d")]


def test_describe_configs_v0_answers_is_default(server: ServerProcess) -> None:
    resource = DescribeConfigsRequest.DescribeConfigsResource
    with WireClient(server.bootstrap) as client:
        answer = old_request(client, DescribeConfigsRequest(resources=[resource(
            resource_type=4, resource_name="1", configuration_keys=None)]), 0,
            DescribeConfigsResponse)
    [result] = answer.results
    assert result.error_code == 0
    configs = {c.name: c for c in result.configs}
    assert configs["num.partitions"].is_default
    assert configs["num.partitions"].value == "1"
    assert not configs["group.initial.rebalance.delay.ms"].is_default  # set by the fixture


@pytest.mark.slow
def test_kafka_python_pinned_to_0_9_produces_joins_commits_and_consumes(
        server: ServerProcess) -> None:
    """kafka-python with ``api_version=(0, 9)``: Produce v1 (message format v0), Metadata v0,
    ListOffsets v0, JoinGroup v0, OffsetCommit v2, Fetch v1."""
    producer = KafkaProducer(bootstrap_servers=server.bootstrap, api_version=(0, 9))
    for i in range(20):
        producer.send("legacy-kp", key=b"k%d" % i, value=b"v%d" % i)
    producer.flush()
    producer.close()
    consumer = KafkaConsumer("legacy-kp", bootstrap_servers=server.bootstrap, api_version=(0, 9),
                             group_id="legacy-group", auto_offset_reset="earliest",
                             enable_auto_commit=False, consumer_timeout_ms=15000)
    try:
        values = []
        for message in consumer:
            values.append(message.value)
            if len(values) == 20:
                break
        assert values == [b"v%d" % i for i in range(20)]
        consumer.commit()
        assert consumer.committed(TopicPartition("legacy-kp", 0)) == 20
    finally:
        consumer.close()


def kcat(server: ServerProcess, *args: str, data: bytes | None = None
         ) -> subprocess.CompletedProcess[bytes]:
    assert KCAT is not None, "kcat is installed by the Makefile's SYSTEM_DEPS"
    return subprocess.run([KCAT, "-b", server.bootstrap, *OLD_LIBRDKAFKA, *args], input=data,
                          capture_output=True, timeout=60, check=False)


@pytest.mark.slow
def test_kcat_speaking_kafka_0_9_produces_and_consumes_in_a_group(server: ServerProcess) -> None:
    produced = kcat(server, "-P", "-t", "legacy-kcat", "-K:", data=b"a:1\nb:2\nc:3\n")
    assert produced.returncode == 0, produced.stderr
    consumed = kcat(server, "-G", "legacy-kcat-group", "-e", "-f", "%k=%s@%o\n",
                    "-X", "auto.offset.reset=earliest", "legacy-kcat")
    assert consumed.returncode == 0, consumed.stderr
    assert consumed.stdout.decode().splitlines() == ["a=1@0", "b=2@1", "c=3@2"]


@pytest.mark.slow
def test_kafka_4_setting_refuses_removed_versions(kafka4: ServerProcess) -> None:
    with WireClient(kafka4.bootstrap) as client:
        ranges = {k.api_key: (k.min_version, k.max_version)
                  for k in client.request(api_versions_v0()).api_keys}
        assert ranges[0][0] == 3 and ranges[1][0] == 4 and ranges[8][0] == 2
        created = old_request(client, create_topic(TOPIC), 2, CreateTopicsResponse)
        assert created.topics[0].error_code == 0
    refused = [(produce([b"x"], 1), 2), (fetch(0), 3), (list_offsets(-1), 0),
               (commit("g", -1, "", 1, -1), 1), (fetch_offsets("g"), 0),
               (create_topic("other"), 1), (DeleteTopicsRequest(topic_names=[TOPIC],
                                                                timeout_ms=5000), 0)]
    for message, version in refused:
        with WireClient(kafka4.bootstrap) as client:
            message.with_header(correlation_id=1, client_id="legacy-test")
            body = bytes(message.encode(version=version, header=True))
            client.send_raw(_SIZE.pack(len(body)) + body)
            assert client.is_closed(), f"{type(message).__name__} v{version}"
    # librdkafka as a Kafka 0.9 client gets nothing produced
    produced = kcat(kafka4, "-P", "-t", "legacy-kcat", "-X", "message.timeout.ms=3000",
                    data=b"x\n")
    assert produced.returncode != 0 or b"failed" in produced.stderr.lower(), produced.stderr
    # ... and the server still serves what 4.x serves
    with WireClient(kafka4.bootstrap) as client:
        answer = old_request(client, fetch(0), 4, FetchResponse)
        assert answer.responses[0].partitions[0].error_code == 0
