"""Transactions end to end with real clients: exactly-once consume-transform-produce across a
rebalance and a SIGKILLed instance, aborts, zombie fencing, a server SIGKILLed mid-transaction,
and the transactional producers of kafka-python and aiokafka."""

from __future__ import annotations

import datetime
import json
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from confluent_kafka import Consumer, KafkaException, Producer, TopicPartition
from confluent_kafka.admin import AdminClient, NewTopic

import protocol
from protocol import ErrorCode
from storage.dump import dump
from tests.harness import ServerProcess, wait_until
from tests.integration.conftest import WireClient, kio_class, offset_fetch_request
from tests.integration.metrics_scenario import present, scrape, value
from tests.integration.txn_clients import CommittedReader, EtlWorker

OVERRIDES = {"transaction.abort.timed.out.transaction.cleanup.interval.ms": "200"}


@pytest.fixture(scope="module")
def txn_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[ServerProcess]:
    with ServerProcess(tmp_path_factory.mktemp("txn") / "data", OVERRIDES,
                       profile="test") as process:
        yield process


def create_topics(bootstrap: str, **partitions: int) -> None:
    admin = AdminClient({"bootstrap.servers": bootstrap})
    futures = admin.create_topics([NewTopic(name, count) for name, count in partitions.items()])
    for future in futures.values():
        future.result(15)


def produce_plain(bootstrap: str, topic: str, values: list[str]) -> None:
    producer = Producer({"bootstrap.servers": bootstrap})
    for text in values:
        producer.produce(topic, text.encode(), key=text.encode())
    assert producer.flush(10) == 0


def in_transaction(bootstrap: str, transactional_id: str,
                   config: dict[str, str | int] | None = None) -> Producer:
    """A confluent-kafka transactional producer, its id initialized and a transaction begun."""
    producer = Producer({"bootstrap.servers": bootstrap, "transactional.id": transactional_id,
                         **(config or {})})
    producer.init_transactions(10)
    producer.begin_transaction()
    return producer


def committed(bootstrap: str, group: str, topic: str, partitions: int) -> list[int]:
    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": group})
    try:
        found = consumer.committed([TopicPartition(topic, p) for p in range(partitions)], 10)
        return [tp.offset for tp in found]
    finally:
        consumer.close()


@pytest.mark.slow
def test_consume_transform_produce_is_exactly_once_across_a_rebalance_and_a_kill(
        txn_server: ServerProcess, tmp_path: Path) -> None:
    bootstrap = txn_server.bootstrap
    create_topics(bootstrap, etl_in=4, etl_out=3)
    inputs = [f"in-{n:03}" for n in range(300)]
    reader = CommittedReader(bootstrap, "etl_out", 3)
    stay = tmp_path / "stay"
    first = EtlWorker(bootstrap, "etl", "etl_in", "etl_out", "etl-a", hold_ms=300,
                      stay_file=str(stay))
    second: EtlWorker | None = None
    try:
        produce_plain(bootstrap, "etl_in", inputs[:100])
        assert len(reader.poll_for(100)) >= 100
        second = EtlWorker(bootstrap, "etl", "etl_in", "etl_out", "etl-b")
        wait_until(lambda: second.seen("assigned") and len(first.seen("assigned")) >= 2,
                   timeout=20, message="the second instance joined: a rebalance")
        produce_plain(bootstrap, "etl_in", inputs[100:200])
        wait_until(lambda: second.seen("committed") and first.seen("committed"), timeout=20,
                   message="both instances commit transactions")
        done = len(first.seen("committed"))
        produce_plain(bootstrap, "etl_in", inputs[200:250])
        wait_until(lambda: len(first.seen("committed")) > done, timeout=20,
                   message="the first instance commits a transaction of the last inputs")
        # the first instance's next transaction (with records of these or of the last inputs,
        # which land on its partitions too) stays open until it is killed in it
        stay.touch()
        produce_plain(bootstrap, "etl_in", inputs[250:])
        wait_until(lambda: first.seen("staying"), timeout=20,
                   message="the first instance inside a transaction")
        first.kill()
        wait_until(lambda: any(e.get("event") == "aborting a transaction"
                               and e.get("transactional_id") == "etl-a"
                               for e in list(txn_server.events)), timeout=20,
                   message="the killed instance's transaction aborted at its timeout")
        out = reader.poll_for(300, timeout=45)
        assert sorted(out) == sorted(f"{v}-out".encode() for v in inputs)
        out = reader.read_to_end("etl_out", 3)
        assert len(out) == 300, "a record was written twice"
        ends = [reader.consumer.get_watermark_offsets(TopicPartition("etl_in", p), 5)[1]
                for p in range(4)]
        assert sum(ends) == 300
        wait_until(lambda: committed(bootstrap, "etl", "etl_in", 4) == ends, timeout=15,
                   message="the group's committed offsets are the input's ends")
    finally:
        first.stop()
        if second is not None:
            second.stop()
        reader.close()


def wire_offset_fetch_stable(bootstrap: str, group: str, topic: str) -> tuple[int, int]:
    """OffsetFetch v8 with ``require_stable`` for partition 0: (error code, offset)."""
    request = offset_fetch_request(group, topic, [0], require_stable=True)
    with WireClient(bootstrap) as client:
        [group_result] = client.request(request).groups
    [partition] = group_result.topics[0].partitions
    return int(partition.error_code), int(partition.committed_offset)


def test_an_aborted_transaction_is_invisible_to_read_committed_and_commits_no_offsets(
        txn_server: ServerProcess) -> None:
    bootstrap = txn_server.bootstrap
    create_topics(bootstrap, ab_in=1, ab_out=2)
    group_member = Consumer({"bootstrap.servers": bootstrap, "group.id": "ab"})
    producer = in_transaction(bootstrap, "ab-1")
    for n in range(6):
        producer.produce("ab_out", f"aborted-{n}".encode(), partition=n % 2)
    producer.send_offsets_to_transaction([TopicPartition("ab_in", 0, 42)],
                                         group_member.consumer_group_metadata(), 10)
    producer.flush(10)
    error, _ = wire_offset_fetch_stable(bootstrap, "ab", "ab_in")
    assert error == ErrorCode.unstable_offset_commit  # pending until the marker
    url = txn_server.metrics_url
    assert url is not None
    samples = scrape(url)
    assert present(samples, "transaction-count", state="Ongoing") >= 1
    assert present(samples, "pending-transactional-offset-count") >= 1
    producer.abort_transaction(10)
    wait_until(lambda: (value(scrape(url), "transactions-completed-total", result="abort")
                        or 0) >= 1, message="the abort is counted")
    producer.begin_transaction()
    producer.produce("ab_out", b"committed-0", partition=0)
    producer.commit_transaction(10)

    assert wire_offset_fetch_stable(bootstrap, "ab", "ab_in") == (ErrorCode.none, -1)
    committed_reader = CommittedReader(bootstrap, "ab_out", 2)
    uncommitted_reader = CommittedReader(bootstrap, "ab_out", 2, "read_uncommitted")
    try:
        assert committed_reader.read_to_end("ab_out", 2) == [b"committed-0"]
        assert sorted(uncommitted_reader.poll_for(7)) == sorted(
            [b"committed-0", *(f"aborted-{n}".encode() for n in range(6))])
    finally:
        committed_reader.close()
        uncommitted_reader.close()
        group_member.close()


def test_a_second_producer_with_the_same_transactional_id_fences_the_first(
        txn_server: ServerProcess) -> None:
    bootstrap = txn_server.bootstrap
    create_topics(bootstrap, fence_out=1)
    zombie = in_transaction(bootstrap, "fence-1")
    zombie.produce("fence_out", b"zombie")
    assert zombie.flush(10) == 0
    successor = Producer({"bootstrap.servers": bootstrap, "transactional.id": "fence-1"})
    successor.init_transactions(10)  # aborts the zombie's open transaction
    with pytest.raises(KafkaException) as raised:
        zombie.produce("fence_out", b"zombie-again")
        zombie.commit_transaction(10)
    assert raised.value.args[0].fatal()
    successor.begin_transaction()
    successor.produce("fence_out", b"successor")
    successor.commit_transaction(10)
    reader = CommittedReader(bootstrap, "fence_out", 1)
    try:
        assert reader.read_to_end("fence_out", 1) == [b"successor"]
    finally:
        reader.close()


@pytest.mark.slow
def test_a_transaction_open_when_the_server_is_killed_is_aborted_at_its_timeout(
        tmp_path: Path) -> None:
    with ServerProcess(tmp_path / "data", OVERRIDES, profile="test") as server:
        bootstrap = server.bootstrap
        create_topics(bootstrap, crash_out=2)
        before = in_transaction(bootstrap, "crash-0")
        before.produce("crash_out", b"committed-before", partition=1)
        before.commit_transaction(10)
        open_txn = in_transaction(bootstrap, "crash-1", {"transaction.timeout.ms": 2000})
        for n in range(4):
            open_txn.produce("crash_out", f"in-doubt-{n}".encode(), partition=n % 2)
        assert open_txn.flush(10) == 0

        server.restart()  # SIGKILL: the transaction is Ongoing in the store
        started = time.monotonic()
        reader = CommittedReader(bootstrap, "crash_out", 2)
        try:
            # the LSO holds read_committed consumers back until the transaction is aborted
            assert reader.read_to_end("crash_out", 2, timeout=20) == [b"committed-before"]
            assert time.monotonic() - started < 15
            # the server logs the abort before writing its markers; its output is read by a
            # thread of ours, which may not have reached that line yet
            server.wait_event("aborting a transaction", 5, transactional_id="crash-1")
            after = in_transaction(bootstrap, "crash-1")
            after.produce("crash_out", b"committed-after", partition=0)
            after.commit_transaction(10)
            assert reader.read_to_end("crash_out", 2) == [b"committed-before",
                                                          b"committed-after"]
        finally:
            reader.close()
            del before, open_txn  # destroyed while the server runs: no reconnect attempts
        # the store holds the transaction's history as Kafka's TransactionLog records, as
        # `log dump` prints them
        statuses = [row["value"]["transactionStatus"] for row in dump(tmp_path / "data")
                    if row["type"] == "TransactionLog"
                    and row["key"]["transactionalId"] == "crash-1"]
        # Empty, Ongoing; after the restart PrepareAbort, CompleteAbort; the next producer's
        assert statuses[:4] == [0, 1, 3, 5] and statuses[-1] == 4


def test_kafka_pythons_transactional_producer_commits_and_aborts(
        txn_server: ServerProcess) -> None:
    from kafka import KafkaConsumer, KafkaProducer
    from kafka import TopicPartition as KafkaTopicPartition
    from kafka.structs import OffsetAndMetadata

    bootstrap = txn_server.bootstrap
    create_topics(bootstrap, kp_out=2)
    producer = KafkaProducer(bootstrap_servers=bootstrap, transactional_id="kafka-python-1")
    try:
        producer.init_transactions()
        producer.begin_transaction()
        producer.send("kp_out", b"kp-aborted", partition=0)
        producer.flush()
        producer.abort_transaction()
        producer.begin_transaction()
        producer.send("kp_out", b"kp-committed", partition=1)
        producer.send_offsets_to_transaction(
            {KafkaTopicPartition("kp_out", 0): OffsetAndMetadata(7, "", -1)}, "kp-group")
        producer.commit_transaction()
    finally:
        producer.close(timeout=5)
    consumer = KafkaConsumer(bootstrap_servers=bootstrap, isolation_level="read_committed",
                             group_id="kp-group", enable_auto_commit=False,
                             auto_offset_reset="earliest", consumer_timeout_ms=3000)
    try:
        consumer.assign([KafkaTopicPartition("kp_out", p) for p in (0, 1)])
        assert consumer.committed(KafkaTopicPartition("kp_out", 0)) == 7
        values: list[bytes] = []
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and not values:
            for records in consumer.poll(timeout_ms=200).values():
                values.extend(r.value for r in records)
        assert values == [b"kp-committed"]
    finally:
        consumer.close()


def test_aiokafkas_transactional_producer_commits_and_aborts(txn_server: ServerProcess) -> None:
    import asyncio

    from aiokafka import AIOKafkaConsumer, AIOKafkaProducer
    from aiokafka import TopicPartition as AioTopicPartition

    bootstrap = txn_server.bootstrap
    create_topics(bootstrap, aio_out=1)

    async def scenario() -> list[bytes]:
        producer = AIOKafkaProducer(bootstrap_servers=bootstrap,
                                    transactional_id="aiokafka-1")
        await producer.start()
        try:
            async with producer.transaction():
                await producer.send_and_wait("aio_out", b"aio-committed-0", partition=0)
            await producer.begin_transaction()
            await producer.send_and_wait("aio_out", b"aio-aborted", partition=0)
            await producer.abort_transaction()
            async with producer.transaction():
                await producer.send_and_wait("aio_out", b"aio-committed-1", partition=0)
                await producer.send_offsets_to_transaction(
                    {AioTopicPartition("aio_out", 0): 3}, "aio-group")
        finally:
            await producer.stop()
        consumer = AIOKafkaConsumer(bootstrap_servers=bootstrap, group_id="aio-group",
                                    isolation_level="read_committed",
                                    enable_auto_commit=False)
        await consumer.start()
        try:
            tp = AioTopicPartition("aio_out", 0)
            consumer.assign([tp])
            assert await consumer.committed(tp) == 3
            consumer.seek(tp, 0)
            batches = await consumer.getmany(tp, timeout_ms=5000)
            return [r.value for r in batches.get(tp, [])]
        finally:
            await consumer.stop()

    assert asyncio.run(scenario()) == [b"aio-committed-0", b"aio-committed-1"]


def test_the_transactional_bench_reports_committed_records_next_to_plain_ones(
        txn_server: ServerProcess, capsys: pytest.CaptureFixture[str]) -> None:
    import argparse

    from coordinator.bench import produce_consume

    parser = argparse.ArgumentParser()
    produce_consume.add_arguments(parser)
    args = parser.parse_args(["--bootstrap", txn_server.bootstrap, "--transactional",
                              "--records", "1000", "--partitions", "2"])
    assert produce_consume.run(args) == 0
    row = json.loads(capsys.readouterr().out.strip().splitlines()[-1])
    assert row["case"] == "produce-consume-transactional"
    assert row["records_per_transaction"] == 100 and row["consumed"] == 1000
    assert row["delivery_errors"] == 0
    assert row["committed_records_per_s"] > 0 and row["non_transactional_records_per_s"] > 0


def test_describe_and_list_transactions_and_a_transactional_batch_needs_its_id(
        txn_server: ServerProcess) -> None:
    from tests.unit.topiclog_helpers import make_batch, set_field

    bootstrap = txn_server.bootstrap
    create_topics(bootstrap, desc_out=1)
    producer = in_transaction(bootstrap, "described")
    producer.produce("desc_out", b"x")
    assert producer.flush(10) == 0
    describe = kio_class("describe_transactions", 0, "request", "DescribeTransactionsRequest")
    listing = kio_class("list_transactions", 1, "request", "ListTransactionsRequest")
    produce = kio_class("produce", 9, "request", "ProduceRequest")
    with WireClient(bootstrap) as wire:
        # (an unknown id is answered with Kafka's start time -1, which kio cannot decode)
        [described] = wire.request(protocol.make(
            describe, transactional_ids=("described",))).transaction_states
        assert (described.error_code, described.transaction_state) == (0, "Ongoing")
        assert [(t.topic, list(t.partitions)) for t in described.topics] == [("desc_out", [0])]
        listed = wire.request(protocol.make(listing, state_filters=("Ongoing", "Bogus"),
                                            producer_id_filters=(), duration_filter=-1))
        assert listed.unknown_state_filters == ("Bogus",)
        assert "described" in {t.transactional_id for t in listed.transaction_states}
        # a transactional batch in a request without a transactional id: refused, as Kafka
        batch = make_batch([b"stray"], producer_id=described.producer_id,
                           epoch=described.producer_epoch, sequence=5)
        batch = set_field(batch, 21, ">h", 0x10)
        response = wire.request(protocol.make(
            produce, transactional_id=None, acks=-1, timeout=datetime.timedelta(seconds=5),
            topic_data=(protocol.make(
                kio_class("produce", 9, "request", "TopicProduceData"), name="desc_out",
                partition_data=(protocol.make(
                    kio_class("produce", 9, "request", "PartitionProduceData"), index=0,
                    records=batch),)),)))
        assert response.responses[0].partition_responses[0].error_code == \
            ErrorCode.transactional_id_authorization_failed
    producer.abort_transaction(10)


def test_a_recovering_producer_naming_its_epoch_aborts_its_transaction_and_continues(
        txn_server: ServerProcess) -> None:
    """KIP-360: InitProducerId with the producer's own id and epoch while its transaction is
    open aborts it and bumps the epoch twice (the abort's epoch, then the producer's)."""
    bootstrap = txn_server.bootstrap
    create_topics(bootstrap, recover_out=1)
    init = kio_class("init_producer_id", 4, "request", "InitProducerIdRequest")
    add = kio_class("add_partitions_to_txn", 3, "request", "AddPartitionsToTxnRequest")
    add_topic = kio_class("add_partitions_to_txn", 3, "request", "AddPartitionsToTxnTopic")

    def init_request(producer_id: int, epoch: int) -> object:
        return protocol.make(init, transactional_id="recovering",
                             transaction_timeout=datetime.timedelta(seconds=30),
                             producer_id=producer_id, producer_epoch=epoch)

    with WireClient(bootstrap) as wire:
        first = wire.request(init_request(-1, -1))
        added = wire.request(protocol.make(
            add, v3_and_below_transactional_id="recovering",
            v3_and_below_producer_id=first.producer_id,
            v3_and_below_producer_epoch=first.producer_epoch,
            v3_and_below_topics=(protocol.make(add_topic, name="recover_out",
                                               partitions=(0,)),)))
        [topic] = added.results_by_topic_v3_and_below
        assert topic.results_by_partition[0].partition_error_code == ErrorCode.none
        again = wire.request(init_request(first.producer_id, first.producer_epoch))
        assert again.error_code == ErrorCode.none
        assert (again.producer_id, again.producer_epoch) == (first.producer_id,
                                                             first.producer_epoch + 2)
        stale = wire.request(init_request(first.producer_id, first.producer_epoch))
        assert stale.error_code == ErrorCode.producer_fenced
