"""A synthetic store written with ``storage``'s own writer, for the bench and the tests.

Consumer-protocol groups scale up and down (member metadata, group epoch bumps, target
assignments batched by an assignment interval, members reconciling one by one, tombstones when
members leave), classic groups go through generations, and members commit offsets all along.
Deterministic for a given seed.
"""

from __future__ import annotations

import heapq
import random
import uuid
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pipeline.consumer_protocol import encode_assignment, encode_subscription
from storage.log import PartitionLog
from storage.records import (
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupCurrentMemberAssignmentValue,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMemberMetadataValue,
    ConsumerGroupMetadataKey,
    ConsumerGroupMetadataValue,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupPartitionMetadataValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMemberValue,
    ConsumerGroupTargetAssignmentMetadataKey,
    ConsumerGroupTargetAssignmentMetadataValue,
    GroupMetadataKey,
    GroupMetadataValue,
    MemberMetadata,
    OffsetCommitKey,
    OffsetCommitValue,
    TopicMetadata,
    TopicMetadataKey,
    TopicMetadataValue,
    TopicPartitions,
    encode_record,
)

Event = tuple[int, list[tuple[Any, Any]]]  # (timestamp ms, records appended together)
START_MS = 1_767_225_600_000  # 2026-01-01T00:00:00Z


@dataclass(frozen=True, slots=True)
class Topic:
    name: str
    topic_id: uuid.UUID
    partitions: int


def round_robin(members: list[str], partitions: int) -> dict[str, list[int]]:
    out: dict[str, list[int]] = {m: [] for m in members}
    for p in range(partitions):
        if members:
            out[members[p % len(members)]].append(p)
    return out


def consumer_group(group_id: str, topic: Topic, rng: random.Random,
                   interval_ms: int = 1000) -> Iterator[Event]:
    """A consumer-protocol group that scales between 1 and 6 members, forever."""
    now = START_MS + rng.randrange(10_000)
    epoch = 0
    members: list[str] = []
    target: dict[str, list[int]] = {}
    serial = 0
    tid = topic.topic_id

    def tps(parts: list[int]) -> tuple[TopicPartitions, ...]:
        return (TopicPartitions(topic_id=tid, partitions=tuple(parts)),) if parts else ()

    while True:
        now += rng.randrange(200, 3000)
        leaving = len(members) >= 6 or (len(members) > 1 and rng.random() < 0.4)
        records: list[tuple[Any, Any]] = []
        if leaving:
            gone = members.pop(rng.randrange(len(members)))
            target.pop(gone, None)
            records += [
                (ConsumerGroupCurrentMemberAssignmentKey(group_id=group_id, member_id=gone),
                 None),
                (ConsumerGroupTargetAssignmentMemberKey(group_id=group_id, member_id=gone), None),
                (ConsumerGroupMemberMetadataKey(group_id=group_id, member_id=gone), None),
            ]
        else:
            serial += 1
            new = f"{group_id}-m{serial}-{uuid.UUID(int=rng.getrandbits(128))}"
            members.append(new)
            records.append((
                ConsumerGroupMemberMetadataKey(group_id=group_id, member_id=new),
                ConsumerGroupMemberMetadataValue(
                    client_id=f"client-{serial}", client_host="/127.0.0.1",
                    subscribed_topic_names=(topic.name,), rebalance_timeout_ms=30_000,
                    server_assignor="uniform")))
        epoch += 1
        records.append((ConsumerGroupMetadataKey(group_id=group_id),
                        ConsumerGroupMetadataValue(epoch=epoch)))
        if epoch == 1:
            records.append((ConsumerGroupPartitionMetadataKey(group_id=group_id),
                            ConsumerGroupPartitionMetadataValue(topics=(TopicMetadata(
                                topic_id=tid, topic_name=topic.name,
                                num_partitions=topic.partitions),))))
        yield now, records
        # the assignor runs at the next interval tick (batching)
        now += rng.randrange(1, interval_ms + 1)
        new_target = round_robin(members, topic.partitions)
        finished = now + rng.randrange(1, 20)
        records = [(ConsumerGroupTargetAssignmentMemberKey(group_id=group_id, member_id=m),
                    ConsumerGroupTargetAssignmentMemberValue(topic_partitions=tps(parts)))
                   for m, parts in new_target.items() if target.get(m) != parts]
        records.append((ConsumerGroupTargetAssignmentMetadataKey(group_id=group_id),
                        ConsumerGroupTargetAssignmentMetadataValue(assignment_epoch=epoch,
                                                                   timestamp=finished)))
        now = finished
        yield now, records
        old_target, target = target, new_target
        # members reconcile: those losing partitions revoke first, then all reach the epoch
        for m in members:
            lost = sorted(set(old_target.get(m, [])) - set(target[m]))
            if lost:
                now += rng.randrange(5, 200)
                kept = sorted(set(old_target.get(m, [])) & set(target[m]))
                yield now, [(ConsumerGroupCurrentMemberAssignmentKey(group_id=group_id,
                                                                     member_id=m),
                             ConsumerGroupCurrentMemberAssignmentValue(
                                 member_epoch=epoch - 1, previous_member_epoch=epoch - 2,
                                 state=1, assigned_partitions=tps(kept),
                                 partitions_pending_revocation=tps(lost)))]
        for m in members:
            now += rng.randrange(5, 300)
            yield now, [(ConsumerGroupCurrentMemberAssignmentKey(group_id=group_id, member_id=m),
                         ConsumerGroupCurrentMemberAssignmentValue(
                             member_epoch=epoch, previous_member_epoch=epoch - 1, state=0,
                             assigned_partitions=tps(target[m])))]
        # commits while stable
        for _ in range(rng.randrange(5, 40)):
            now += rng.randrange(50, 1000)
            batch: list[tuple[Any, Any]] = []
            for p in range(topic.partitions):
                batch.append((OffsetCommitKey(group=group_id, topic=topic.name, partition=p),
                              OffsetCommitValue(offset=now // 10 + p, commit_timestamp=now,
                                                topic_id=tid)))
            yield now, batch


def classic_group(group_id: str, topic: Topic, rng: random.Random) -> Iterator[Event]:
    """A classic consumer group whose generations come and go; ends Empty now and then."""
    now = START_MS + rng.randrange(10_000)
    generation = 0
    members: list[str] = []
    serial = 0
    subscription = encode_subscription([topic.name])
    while True:
        now += rng.randrange(1000, 10_000)
        if members and (len(members) >= 4 or rng.random() < 0.4):
            members.pop(rng.randrange(len(members)))
        else:
            serial += 1
            members.append(f"consumer-{serial}-{uuid.UUID(int=rng.getrandbits(128))}")
        generation += 1
        now += rng.randrange(10, 3000)
        plan = round_robin(members, topic.partitions)
        value = GroupMetadataValue(
            protocol_type="consumer", generation=generation,
            protocol="range" if members else None, leader=members[0] if members else None,
            current_state_timestamp=now,
            members=tuple(MemberMetadata(
                member_id=m, client_id="classic", client_host="/127.0.0.1",
                rebalance_timeout=30_000, session_timeout=10_000, subscription=subscription,
                assignment=encode_assignment([(topic.name, plan[m])])) for m in members))
        yield now, [(GroupMetadataKey(group=group_id), value)]
        for _ in range(rng.randrange(3, 20) if members else 0):
            now += rng.randrange(100, 2000)
            yield now, [(OffsetCommitKey(group=group_id, topic=topic.name, partition=p),
                         OffsetCommitValue(offset=now // 10 + p, commit_timestamp=now))
                        for p in range(topic.partitions)]


def write_store(log_dir: Path, records: int, *, partitions: int = 4, consumer_groups: int = 8,
                classic_groups: int = 4, topic_partitions: int = 12, seed: int = 7,
                segment_bytes: int = 16 * 1024 * 1024) -> int:
    """Write about ``records`` records (at least; whole events) and return how many."""
    rng = random.Random(seed)
    topics = [Topic(f"topic-{i}", uuid.UUID(int=rng.getrandbits(128)), topic_partitions)
              for i in range(max(consumer_groups, classic_groups))]
    with PartitionLog.open(log_dir, 0, topic="__cluster_metadata") as meta:
        meta.append_batch([encode_record(TopicMetadataKey(name=t.name), TopicMetadataValue(
            topic_id=t.topic_id, num_partitions=t.partitions)) for t in topics], START_MS)
        meta.flush()
    written = len(topics)
    per_partition: list[list[Iterator[Event]]] = [[] for _ in range(partitions)]
    for i in range(consumer_groups):
        per_partition[i % partitions].append(
            consumer_group(f"cg-{i}", topics[i], random.Random(rng.random())))
    for i in range(classic_groups):
        per_partition[(i + consumer_groups) % partitions].append(
            classic_group(f"classic-{i}", topics[i], random.Random(rng.random())))
    budget = max(1, (records - written) // partitions)
    for p, groups in enumerate(per_partition):
        if not groups:
            continue
        count = 0
        with PartitionLog.open(log_dir, p, segment_bytes) as plog:
            events = heapq.merge(*groups, key=lambda e: e[0])
            for ts, recs in events:
                plog.append_batch([encode_record(k, v) for k, v in recs], ts)
                count += len(recs)
                if count >= budget:
                    break
            plog.flush()
        written += count
    return written
