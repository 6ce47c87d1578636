"""What the chaos soak reads back from the server: whether a group is stable with every
partition assigned, the committed offsets of groups, and every record of a topic."""

from __future__ import annotations

import threading
from collections import Counter
from typing import Any

from .journal import CommitKey

REQUEST_TIMEOUT_S = 5.0


def admin_client(bootstrap: str) -> Any:
    """A new admin client, its metadata fetched. (A new one after each restart: an admin
    client whose connection died can wait seconds before it asks for its coordinator again.)"""
    from confluent_kafka.admin import AdminClient

    admin = AdminClient({"bootstrap.servers": bootstrap, "client.id": "chaos-watcher",
                         "log_level": 0, "reconnect.backoff.max.ms": 200,
                         "retry.backoff.max.ms": 200})
    admin.list_topics(timeout=REQUEST_TIMEOUT_S)
    return admin


def destroy_in_background(holder: list[Any]) -> None:
    """Destroy the clients ``holder`` holds (it must hold their only references) on a daemon
    thread of its own, not the caller's: librdkafka's destroy can wait for ever for a broker
    thread that does not end (seen after broker stops on a loaded machine: the soak's main
    thread in ``Admin_dealloc``, ``rd_kafka_destroy_app`` joining the client's ``rdk:main``
    thread, itself joining an ``rdk:broker`` thread, 14 minutes on), and such a client must
    not stop the soak; a thread left waiting does not keep the process from exiting."""
    threading.Thread(target=holder.clear, name="client-destroy", daemon=True).start()


def _owned(member: Any) -> list[int]:
    """The partitions a described group member owns."""
    return [tp.partition for tp in (member.assignment.topic_partitions
                                    if member.assignment else [])]


def groups_stable(admin: Any, groups: dict[str, int], partitions: int) -> bool:
    """Every group stable, with its expected number of members and each of the topic's
    partitions assigned to exactly one of them."""
    from confluent_kafka import ConsumerGroupState, KafkaException

    try:
        futures = admin.describe_consumer_groups(list(groups),
                                                 request_timeout=REQUEST_TIMEOUT_S)
        for group, members in groups.items():
            description = futures[group].result(REQUEST_TIMEOUT_S)
            if description.state != ConsumerGroupState.STABLE:
                return False
            if len(description.members) != members:
                return False
            owned = [p for member in description.members for p in _owned(member)]
            if sorted(owned) != list(range(partitions)):
                return False
    except (KafkaException, TimeoutError, ValueError):
        return False
    return True


def describe_groups(admin: Any, groups: list[str]) -> dict[str, str]:
    """Each group as described now, in a few words (for a report): its state, its members and
    the partitions each owns, or the error the description failed with."""
    from confluent_kafka import KafkaException

    described: dict[str, str] = {}
    try:
        futures = admin.describe_consumer_groups(groups, request_timeout=REQUEST_TIMEOUT_S)
    except KafkaException as exc:
        return {group: f"not described: {exc}" for group in groups}
    for group in groups:
        try:
            description = futures[group].result(REQUEST_TIMEOUT_S)
        except (KafkaException, TimeoutError, ValueError) as exc:
            described[group] = f"not described: {exc!r}"
            continue
        owned = {member.client_id: sorted(_owned(member)) for member in description.members}
        described[group] = f"{description.state.name} {len(owned)} members {owned}"
    return described


def committed_offsets(admin: Any, groups: list[str], topic: str, partitions: int,
                      timeout_s: float = 30.0) -> dict[CommitKey, int]:
    """The offsets committed by each group on the topic's partitions (absent: none), asked
    again until ``timeout_s`` while the server answers with errors."""
    import time

    from confluent_kafka import KafkaException

    deadline = time.monotonic() + timeout_s
    while True:
        try:
            return _committed_offsets(admin, groups, topic, partitions)
        except KafkaException:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)


def _committed_offsets(admin: Any, groups: list[str], topic: str,
                       partitions: int) -> dict[CommitKey, int]:
    from confluent_kafka import ConsumerGroupTopicPartitions, TopicPartition

    found: dict[CommitKey, int] = {}
    for group in groups:
        request = ConsumerGroupTopicPartitions(
            group, [TopicPartition(topic, p) for p in range(partitions)])
        [future] = admin.list_consumer_group_offsets(
            [request], request_timeout=REQUEST_TIMEOUT_S).values()
        result = future.result(3 * REQUEST_TIMEOUT_S)
        for tp in result.topic_partitions:
            if tp.error is None and tp.offset >= 0:
                found[(group, tp.topic, tp.partition)] = tp.offset
    return found


def read_topic(bootstrap: str, topic: str, partitions: int, timeout_s: float = 60.0) -> Counter[
        bytes]:
    """Every value of every partition of the topic, from the start to the high watermark."""
    import time

    from confluent_kafka import OFFSET_BEGINNING, Consumer, TopicPartition

    consumer = Consumer({"bootstrap.servers": bootstrap, "group.id": "chaos-readback",
                         "enable.auto.commit": False, "enable.partition.eof": True,
                         "log_level": 0})
    values: Counter[bytes] = Counter()
    try:
        ends = {p: consumer.get_watermark_offsets(TopicPartition(topic, p),
                                                  timeout=REQUEST_TIMEOUT_S)[1]
                for p in range(partitions)}
        consumer.assign([TopicPartition(topic, p, OFFSET_BEGINNING) for p in range(partitions)])
        done = {p for p, end in ends.items() if end == 0}
        deadline = time.monotonic() + timeout_s
        while len(done) < partitions:
            if time.monotonic() > deadline:
                raise TimeoutError(f"read back {sum(values.values())} records of {topic}; "
                                   f"partitions {sorted(set(ends) - done)} unfinished")
            message = consumer.poll(0.2)
            if message is None:
                continue
            partition, offset = message.partition(), message.offset()
            if partition is None or partition not in ends:
                continue
            if message.error() is None:
                value = message.value()
                if value is not None:
                    values[value] += 1
                if offset is not None and offset + 1 >= ends[partition]:
                    done.add(partition)
            else:  # the end of the partition
                position = consumer.position([TopicPartition(topic, partition)])[0]
                if position.offset >= ends[partition]:
                    done.add(partition)
    finally:
        consumer.close()
    return values
