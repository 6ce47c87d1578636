"""Produce, Fetch and ListOffsets on the wire: long polls, acks=0, refused batches."""

from __future__ import annotations

import datetime
import threading
import time
import uuid
from typing import Any

from confluent_kafka.admin import AdminClient, NewTopic

import protocol
from tests.integration.conftest import WireClient, kio_class, metadata_request
from tests.unit.topiclog_helpers import make_batch, set_field

ErrorCode = protocol.ErrorCode


def new_topic(bootstrap: str, partitions: int = 1) -> str:
    name = f"wire-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1)])[name].result(10)
    return name


def produce_request(topic: str, records: bytes, acks: int = -1, version: int = 9) -> Any:
    cls = kio_class("produce", version, "request", "ProduceRequest")
    topic_cls = kio_class("produce", version, "request", "TopicProduceData")
    part_cls = kio_class("produce", version, "request", "PartitionProduceData")
    return protocol.make(cls, transactional_id=None, acks=acks,
                         timeout=datetime.timedelta(seconds=10),
                         topic_data=(protocol.make(topic_cls, name=topic, partition_data=(
                             protocol.make(part_cls, index=0, records=records),)),))


def fetch_request(topic: str, offset: int, max_wait_ms: int, min_bytes: int = 1) -> Any:
    cls = kio_class("fetch", 12, "request", "FetchRequest")
    topic_cls = kio_class("fetch", 12, "request", "FetchTopic")
    part_cls = kio_class("fetch", 12, "request", "FetchPartition")
    return protocol.make(
        cls, replica_id=-1, max_wait=datetime.timedelta(milliseconds=max_wait_ms),
        min_bytes=min_bytes, max_bytes=1 << 20, isolation_level=0, session_id=0,
        session_epoch=-1, forgotten_topics_data=(), rack_id="",
        topics=(protocol.make(topic_cls, topic=topic, partitions=(
            protocol.make(part_cls, partition=0, fetch_offset=offset, current_leader_epoch=-1,
                          last_fetched_epoch=-1, log_start_offset=-1,
                          partition_max_bytes=1 << 20),)),))


def latest_offset(wire: WireClient, topic: str) -> int:
    cls = kio_class("list_offsets", 9, "request", "ListOffsetsRequest")
    topic_cls = kio_class("list_offsets", 9, "request", "ListOffsetsTopic")
    part_cls = kio_class("list_offsets", 9, "request", "ListOffsetsPartition")
    response = wire.request(protocol.make(cls, replica_id=-1, isolation_level=0, topics=(
        protocol.make(topic_cls, name=topic, partitions=(
            protocol.make(part_cls, partition_index=0, timestamp=-1,
                          current_leader_epoch=-1),)),)))
    partition = response.topics[0].partitions[0]
    assert partition.error_code == ErrorCode.none
    return int(partition.offset)


def produce_error(wire: WireClient, topic: str, records: bytes) -> ErrorCode:
    response = wire.request(produce_request(topic, records))
    return response.responses[0].partition_responses[0].error_code


def test_fetch_waits_max_wait_when_empty(wire: WireClient, shared_server: Any) -> None:
    topic = new_topic(shared_server.bootstrap)
    started = time.monotonic()
    response = wire.request(fetch_request(topic, 0, max_wait_ms=800))
    elapsed = time.monotonic() - started
    partition = response.responses[0].partitions[0]
    assert partition.error_code == ErrorCode.none and not partition.records
    assert 0.75 <= elapsed < 3.0


def test_fetch_returns_early_when_data_arrives(wire: WireClient, shared_server: Any) -> None:
    topic = new_topic(shared_server.bootstrap)
    batch = make_batch([b"hello"])

    def produce_later() -> None:
        time.sleep(0.3)
        with WireClient(shared_server.bootstrap) as other:
            assert produce_error(other, topic, batch) == ErrorCode.none

    producer = threading.Thread(target=produce_later)
    started = time.monotonic()
    producer.start()
    response = wire.request(fetch_request(topic, 0, max_wait_ms=10_000))
    elapsed = time.monotonic() - started
    producer.join(10)
    partition = response.responses[0].partitions[0]
    assert partition.high_watermark == 1 and partition.records
    assert bytes(partition.records)[12:] == batch[12:]  # as produced, from the leader epoch on
    assert elapsed < 5.0


def test_acks_zero_gets_no_response(wire: WireClient, shared_server: Any) -> None:
    topic = new_topic(shared_server.bootstrap)
    wire.send(produce_request(topic, make_batch([b"a", b"b"]), acks=0))
    cid = wire.send(metadata_request(12, [topic]))
    got, _ = wire.recv(3, 12)
    assert got == cid  # the next response on the connection is Metadata's
    assert latest_offset(wire, topic) == 2


def test_corrupt_batches_are_refused_and_leave_the_log_unchanged(
        wire: WireClient, shared_server: Any) -> None:
    topic = new_topic(shared_server.bootstrap)
    assert produce_error(wire, topic, make_batch([b"ok"])) == ErrorCode.none
    good = make_batch([b"a", b"b"])
    bad_crc = bytearray(good)
    bad_crc[-1] ^= 0x01
    wrong_count = set_field(set_field(good, 57, ">i", 3), 23, ">i", 2)
    for damaged in (bytes(bad_crc), wrong_count, good[:-4]):
        assert produce_error(wire, topic, damaged) == ErrorCode.corrupt_message
    assert latest_offset(wire, topic) == 1
    assert produce_error(wire, topic, good) == ErrorCode.none
    assert latest_offset(wire, topic) == 3


def test_unknown_topic_and_offset_out_of_range(wire: WireClient, shared_server: Any) -> None:
    missing = f"missing-{uuid.uuid4().hex[:8]}"
    assert produce_error(wire, missing, make_batch([b"a"])) == \
        ErrorCode.unknown_topic_or_partition
    topic = new_topic(shared_server.bootstrap)
    response = wire.request(fetch_request(topic, 5, max_wait_ms=0))
    assert response.responses[0].partitions[0].error_code == ErrorCode.offset_out_of_range


def test_init_producer_id_gives_distinct_ids(wire: WireClient) -> None:
    cls = kio_class("init_producer_id", 4, "request", "InitProducerIdRequest")
    request = protocol.make(cls, transactional_id=None,
                            transaction_timeout=datetime.timedelta(seconds=60),
                            producer_id=-1, producer_epoch=-1)
    first = wire.request(request)
    second = wire.request(request)
    assert first.error_code == second.error_code == ErrorCode.none
    assert first.producer_id != second.producer_id and first.producer_epoch == 0
    transactional = protocol.make(cls, transactional_id="tx",
                                  transaction_timeout=datetime.timedelta(seconds=60),
                                  producer_id=-1, producer_epoch=-1)
    fresh, again = wire.request(transactional), wire.request(transactional)
    assert fresh.error_code == again.error_code == ErrorCode.none
    # a transactional id keeps its producer id; each InitProducerId bumps its epoch
    assert fresh.producer_id == again.producer_id != first.producer_id
    assert (fresh.producer_epoch, again.producer_epoch) == (0, 1)
