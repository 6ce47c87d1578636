"""Real producers write, real consumers read back every record byte-exact.

Producers: confluent-kafka (librdkafka) and kafka-python, idempotent and not, with every
compression codec, each into its own partition of one topic. Consumers: kcat, kafka-python,
aiokafka and confluent-kafka (assign + seek to the beginning) each read the whole topic; keys,
values, headers and timestamps must equal what was produced.
"""

from __future__ import annotations

import asyncio
import functools
import json
import random
import shutil
import subprocess
import time
import uuid
from collections.abc import Iterator
from typing import Any, Literal, cast

import pytest
from aiokafka import AIOKafkaConsumer
from aiokafka.structs import TopicPartition as AioTopicPartition
from confluent_kafka import OFFSET_BEGINNING, TIMESTAMP_LOG_APPEND_TIME, Consumer, Producer
from confluent_kafka import TopicPartition as CkTopicPartition
from confluent_kafka.admin import AdminClient, NewTopic
from kafka import KafkaConsumer, KafkaProducer
from kafka import TopicPartition as KpTopicPartition

from tests.harness import ServerProcess

KCAT = shutil.which("kcat")
CODECS = ["none", "gzip", "snappy", "lz4", "zstd"]
VARIANTS = [(client, idempotent, codec) for client in ("confluent", "kafka-python")
            for idempotent in (False, True) for codec in CODECS]
PER_PARTITION = 30
BASE_TS = 1_700_000_000_000

# (partition, offset, key, value, headers as ((key, value), ...), timestamp)
Row = tuple[int, int, bytes | None, bytes | None, tuple[tuple[str, bytes], ...], int]
# kafka-python's compression_type for each codec
KP_COMPRESSION: dict[str, Literal["gzip", "snappy", "lz4", "zstd"] | None] = {
    "none": None, "gzip": "gzip", "snappy": "snappy", "lz4": "lz4", "zstd": "zstd"}


@pytest.fixture(scope="module")
def data_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    process = ServerProcess(tmp_path_factory.mktemp("dataplane") / "data",
                            extra_args=["--log-level", "DEBUG"]).start()
    try:
        yield process
    finally:
        process.stop()
        process.kill()


def create_topic(server: ServerProcess, partitions: int, **configs: str) -> str:
    name = f"dp-{uuid.uuid4().hex[:8]}"
    admin = AdminClient({"bootstrap.servers": server.bootstrap})
    admin.create_topics([NewTopic(name, partitions, 1, config=configs)])[name].result(10)
    return name


def record_for(partition: int, i: int) -> tuple[bytes | None, bytes | None,
                                               tuple[tuple[str, bytes], ...], int]:
    rng = random.Random(partition * 1000 + i)
    key = None if i % 7 == 3 else bytes(rng.randrange(32, 127) for _ in range(rng.randrange(1, 20)))
    value = None if i % 11 == 5 else bytes(rng.randrange(32, 127)
                                           for _ in range(rng.randrange(0, 300)))
    headers = tuple((f"h{j}", bytes(rng.randrange(32, 127) for _ in range(5)))
                    for j in range(i % 3))
    return key, value, headers, BASE_TS + partition * 10_000 + i


def produce_confluent(server: ServerProcess, topic: str, partition: int, idempotent: bool,
                      codec: str) -> list[Row]:
    producer = Producer({"bootstrap.servers": server.bootstrap, "client.id": "ck-producer",
                         "enable.idempotence": idempotent, "compression.type": codec,
                         "acks": "all", "linger.ms": 5})
    rows: list[Row] = []
    errors: list[Any] = []

    def delivered(i: int, err: Any, msg: Any) -> None:
        if err is not None:
            errors.append(err)
            return
        key, value, headers, ts = record_for(partition, i)  # reports carry no headers
        assert (msg.key(), msg.value(), msg.timestamp()[1]) == (key, value, ts)
        rows.append((msg.partition(), msg.offset(), key, value, headers, ts))

    for i in range(PER_PARTITION):
        key, value, headers, ts = record_for(partition, i)
        producer.produce(topic, value=value, key=key, partition=partition,
                         headers=list(headers) or None, timestamp=ts,
                         on_delivery=functools.partial(delivered, i))
    assert producer.flush(20) == 0
    assert not errors, errors
    return rows


def produce_kafka_python(server: ServerProcess, topic: str, partition: int, idempotent: bool,
                         codec: str) -> list[Row]:
    producer = KafkaProducer(bootstrap_servers=server.bootstrap, client_id="kp-producer",
                             enable_idempotence=idempotent, acks="all", linger_ms=5,
                             compression_type=KP_COMPRESSION[codec])
    futures = []
    for i in range(PER_PARTITION):
        key, value, headers, ts = record_for(partition, i)
        futures.append((producer.send(topic, value=value, key=key, partition=partition,
                                      headers=list(headers), timestamp_ms=ts), i))
    producer.flush(20)
    rows: list[Row] = []
    for future, i in futures:
        meta = future.get(timeout=20)
        key, value, headers, ts = record_for(partition, i)
        rows.append((meta.partition, meta.offset, key, value, headers, ts))
    producer.close(5)
    return rows


@pytest.fixture(scope="module")
def written(data_server: ServerProcess) -> tuple[str, list[Row]]:
    topic = create_topic(data_server, len(VARIANTS))
    rows: list[Row] = []
    for partition, (client, idempotent, codec) in enumerate(VARIANTS):
        produce = produce_confluent if client == "confluent" else produce_kafka_python
        produced = produce(data_server, topic, partition, idempotent, codec)
        assert sorted(r[1] for r in produced) == list(range(PER_PARTITION)), (client, codec)
        rows += produced
    return topic, sorted(rows)


@pytest.mark.slow
def test_producers_wrote_every_record_once(written: tuple[str, list[Row]]) -> None:
    _, rows = written
    assert len(rows) == len(VARIANTS) * PER_PARTITION
    for partition, offset, key, value, headers, ts in rows:
        assert (key, value, headers, ts) == record_for(partition, offset)


@pytest.mark.skipif(KCAT is None, reason="kcat is not installed")
def test_kcat_reads_back(data_server: ServerProcess, written: tuple[str, list[Row]]) -> None:
    topic, rows = written
    assert KCAT is not None
    done = subprocess.run([KCAT, "-b", data_server.bootstrap, "-C", "-e", "-J", "-t", topic,
                           "-o", "beginning", "-X", "client.id=kcat"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    got: list[Row] = []
    for line in done.stdout.splitlines():
        m = json.loads(line)
        flat = m.get("headers") or []
        headers = tuple((flat[j], flat[j + 1].encode()) for j in range(0, len(flat), 2))
        key = None if m["key"] is None else m["key"].encode()
        value = None if m["payload"] is None else m["payload"].encode()
        got.append((m["partition"], m["offset"], key, value, headers, m["ts"]))
    assert sorted(got) == rows


def test_confluent_consumer_reads_back(data_server: ServerProcess,
                                       written: tuple[str, list[Row]]) -> None:
    topic, rows = written
    consumer = Consumer({"bootstrap.servers": data_server.bootstrap, "group.id": "ck-reader",
                         "client.id": "ck-consumer", "enable.auto.commit": False})
    consumer.assign([CkTopicPartition(topic, p, OFFSET_BEGINNING) for p in range(len(VARIANTS))])
    got: list[Row] = []
    deadline = time.monotonic() + 30
    try:
        while len(got) < len(rows) and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
            if msg is None:
                continue
            assert msg.error() is None, msg.error()
            partition, offset, raw_headers = msg.partition(), msg.offset(), msg.headers() or []
            assert partition is not None and offset is not None
            assert isinstance(raw_headers, list)  # a consumed message's: (key, value) pairs
            # consumed header values are bytes (str only in what a producer is given)
            headers = cast("tuple[tuple[str, bytes], ...]",
                           tuple((k, v) for k, v in raw_headers))
            got.append((partition, offset, msg.key(), msg.value(), headers,
                        msg.timestamp()[1]))
        low, high = consumer.get_watermark_offsets(CkTopicPartition(topic, 0), timeout=10)
        assert (low, high) == (0, PER_PARTITION)
        # ListOffsets by timestamp
        wanted = CkTopicPartition(topic, 3, BASE_TS + 3 * 10_000 + 10)
        [found] = consumer.offsets_for_times([wanted], timeout=10)
        assert found.offset == 10
    finally:
        consumer.close()
    assert sorted(got) == rows


def test_kafka_python_consumer_reads_back(data_server: ServerProcess,
                                          written: tuple[str, list[Row]]) -> None:
    topic, rows = written
    consumer = KafkaConsumer(bootstrap_servers=data_server.bootstrap, group_id=None,
                             client_id="kp-consumer", enable_auto_commit=False)
    partitions = [KpTopicPartition(topic, p) for p in range(len(VARIANTS))]
    consumer.assign(partitions)
    consumer.seek_to_beginning()
    got: list[Row] = []
    deadline = time.monotonic() + 30
    try:
        while len(got) < len(rows) and time.monotonic() < deadline:
            for records in consumer.poll(timeout_ms=500).values():
                for r in records:
                    got.append((r.partition, r.offset, r.key, r.value,
                                tuple((k, v) for k, v in r.headers), r.timestamp))
        assert consumer.end_offsets(partitions[:1]) == {partitions[0]: PER_PARTITION}
        assert consumer.beginning_offsets(partitions[:1]) == {partitions[0]: 0}
        found = consumer.offsets_for_times({partitions[5]: BASE_TS + 5 * 10_000 + 7})
        stamp = found[partitions[5]]
        assert stamp is not None and stamp.offset == 7
    finally:
        consumer.close()
    assert sorted(got) == rows


def test_aiokafka_consumer_reads_back(data_server: ServerProcess,
                                      written: tuple[str, list[Row]]) -> None:
    topic, rows = written

    async def consume() -> list[Row]:
        consumer = AIOKafkaConsumer(bootstrap_servers=data_server.bootstrap,
                                    client_id="aio-consumer", enable_auto_commit=False)
        await consumer.start()
        got: list[Row] = []
        try:
            consumer.assign([AioTopicPartition(topic, p) for p in range(len(VARIANTS))])
            await consumer.seek_to_beginning()
            deadline = time.monotonic() + 30
            while len(got) < len(rows) and time.monotonic() < deadline:
                batches = await consumer.getmany(timeout_ms=500)
                for records in batches.values():
                    for r in records:
                        got.append((r.partition, r.offset, r.key, r.value,
                                    tuple((k, bytes(v)) for k, v in r.headers), r.timestamp))
        finally:
            await consumer.stop()
        return got

    assert sorted(asyncio.run(consume())) == rows


def test_log_append_time_topic(data_server: ServerProcess) -> None:
    topic = create_topic(data_server, 1, **{"message.timestamp.type": "LogAppendTime"})
    before = int(time.time() * 1000)
    producer = Producer({"bootstrap.servers": data_server.bootstrap})
    producer.produce(topic, value=b"v", timestamp=1234)
    assert producer.flush(10) == 0
    consumer = Consumer({"bootstrap.servers": data_server.bootstrap, "group.id": "lat",
                         "enable.auto.commit": False})
    consumer.assign([CkTopicPartition(topic, 0, OFFSET_BEGINNING)])
    try:
        deadline = time.monotonic() + 10
        msg = None
        while msg is None and time.monotonic() < deadline:
            msg = consumer.poll(0.5)
        assert msg is not None and msg.error() is None
        kind, ts = msg.timestamp()
        assert kind == TIMESTAMP_LOG_APPEND_TIME and before <= ts <= int(time.time() * 1000)
    finally:
        consumer.close()


def test_negotiated_versions(data_server: ServerProcess,
                             written: tuple[str, list[Row]]) -> None:
    """Which versions each client used (the shared server logs every request at DEBUG)."""
    seen: dict[tuple[str, str], set[int]] = {}
    for event in list(data_server.events):
        if event.get("event") == "request" and event.get("api") in (
                "Produce", "Fetch", "ListOffsets", "InitProducerId"):
            client = str(event.get("client_id"))
            seen.setdefault((client, event["api"]), set()).add(int(event["version"]))
    print(json.dumps({f"{c} {a}": sorted(v) for (c, a), v in sorted(seen.items())}))
    assert seen[("ck-producer", "Produce")] == {10}
    assert seen[("kp-producer", "Produce")] == {9}
    assert seen[("kp-producer", "InitProducerId")] == {4}
