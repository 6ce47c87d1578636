"""Benchmark inputs built the way Kafka's JMH ``ServerSideAssignorBenchmark`` builds them.

* ``members`` members ``member0..``, ``topics`` topics ``topic0..`` with
  ``partitions_per_topic`` partitions each;
* homogeneous: everyone subscribes to every topic; heterogeneous: members and topics are
  split into ``min(5, members)`` buckets, each bucket's members subscribe to its topics;
* racks ``R``: member ``i`` is on ``rack{i % R}`` and partition ``p`` has replicas on racks
  ``p``, ``p + 1`` and ``p + 2`` (mod ``R``);
* incremental: assign ``members - 1`` members from scratch, feed that assignment back as
  the current one, and add ``newMember`` with the subscription of member ``members - 2``.
"""

from __future__ import annotations

import math
import random
import uuid
from dataclasses import dataclass

from assignors.base import PartitionAssignor
from assignors.spec import AssignmentSpec, MemberSpec, TopicId, TopicMetadata

MAX_BUCKETS = 5


@dataclass(frozen=True, slots=True)
class BenchCase:
    assignor: str
    members: int
    topics: int
    partitions_per_topic: int
    subscriptions: str = "homogeneous"
    incremental: bool = False
    racks: int = 0


def _subscriptions(count: int, topic_ids: list[uuid.UUID], kind: str) -> list[list[uuid.UUID]]:
    if kind == "homogeneous":
        return [topic_ids] * count
    buckets = min(MAX_BUCKETS, count)
    if len(topic_ids) < buckets:
        raise ValueError(f"at least {buckets} topics are needed for {buckets} buckets")
    topic_size = math.ceil(len(topic_ids) / buckets)
    member_size = math.ceil(count / buckets)
    subs: list[list[uuid.UUID]] = []
    for bucket in range(buckets):
        bucket_topics = topic_ids[bucket * topic_size:(bucket + 1) * topic_size]
        subs.extend([bucket_topics] * (min((bucket + 1) * member_size, count) - len(subs)))
    return subs


def build_spec(case: BenchCase, assignor: PartitionAssignor, seed: int = 0) -> AssignmentSpec:
    """The spec the benchmark times ``assignor`` on (an incremental case runs it once here)."""
    rng = random.Random(seed)
    topic_ids = [uuid.UUID(int=rng.getrandbits(128), version=4) for _ in range(case.topics)]
    ppt = case.partitions_per_topic
    racks = case.racks
    partition_racks = (
        [{f"rack{(p + j) % racks}" for j in range(3)} for p in range(ppt)] if racks else None
    )
    topics = [
        TopicMetadata(tid, f"topic{i}", ppt, partition_racks) for i, tid in enumerate(topic_ids)
    ]
    lags: dict[TopicId, list[int]] | None = None
    if assignor.name == "lag":
        lags = {tid: [rng.randrange(100_000) for _ in range(ppt)] for tid in topic_ids}

    def rack(i: int) -> str | None:
        return f"rack{i % racks}" if racks else None

    count = case.members - 1 if case.incremental else case.members
    subs = _subscriptions(count, topic_ids, case.subscriptions)
    members = [MemberSpec(f"member{i}", subs[i], rack=rack(i)) for i in range(count)]
    spec = AssignmentSpec.build(members, topics, lags=lags)
    if not case.incremental:
        return spec
    first = assignor.assign(spec).members
    members = [
        MemberSpec(m.member_id, m.subscribed_topic_ids, rack=m.rack, assignment=first[m.member_id])
        for m in members
    ]
    new_subs = subs[case.members - 2] if case.subscriptions == "heterogeneous" else topic_ids
    members.append(MemberSpec("newMember", new_subs, rack=rack(case.members - 1)))
    return AssignmentSpec.build(members, topics, lags=lags)
