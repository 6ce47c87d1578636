"""Benchmark inputs built the way Kafka's JMH ``ServerSideAssignorBenchmark`` builds them.

* ``members`` members ``member0..``, ``topics`` topics ``topic0..`` with
  ``partitions_per_topic`` partitions each;
* homogeneous: everyone subscribes to every topic; heterogeneous: members and topics are
  split into ``min(5, members)`` buckets, each bucket's members subscribe to its topics
  (so really ``min(5, members)`` independent homogeneous sub-groups);
* overlapping (not in Kafka's JMH): member ``i`` subscribes to the ``window`` consecutive
  topics starting at topic ``(stride * i) mod topics`` (wrapping around), so subscriptions
  overlap and, for a ``stride`` prime to ``topics``, the whole group is one component;
* random (not in Kafka's JMH): member ``i`` subscribes to ``window`` topics drawn at random
  (seeded, so every run times the same input);
* racks ``R``: member ``i`` is on ``rack{i % R}`` and partition ``p`` has replicas on racks
  ``p``, ``p + 1`` and ``p + 2`` (mod ``R``);
* incremental: assign ``members - 1`` members from scratch, feed that assignment back as
  the current one, and add ``newMember`` with the subscription of member ``members - 2``
  (overlapping and random: the subscription member ``members - 1`` would have had).

``streams-sticky`` (the streams groups' task assignor) is built the way Kafka's JMH
``StreamsStickyAssignorBenchmark`` builds its input: each topic is one subtopology
``topic-<i>_subtopology`` with ``partitions_per_topic`` tasks, every second one (even ``i``)
stateful; member ``member-<i>`` is a thread of process ``process-<i // members_per_process>``;
``num.standby.replicas`` is ``standby_replicas``. Incremental: ``members - 1`` members are
assigned from scratch, that target is fed back as the previous one and ``newMember`` joins on
its own process ``process-newMember``; with ``remove``, all ``members`` are assigned and the
last member (``member-<members - 1>``) leaves instead.
"""

from __future__ import annotations

import math
import random
import uuid
from dataclasses import dataclass

from assignors.base import PartitionAssignor
from assignors.spec import AssignmentSpec, MemberSpec, TopicId, TopicMetadata
from assignors.sticky_task import StickyTaskAssignor
from assignors.task_spec import SubtopologyTasks, TaskAssignmentSpec, TaskMember

MAX_BUCKETS = 5

SUBSCRIPTIONS = ("homogeneous", "heterogeneous", "overlapping", "random")
"""The subscription patterns of the consumer group assignors' benchmark."""

DEFAULT_WINDOW = {"overlapping": 200, "random": 100}
"""Topics per member when ``window`` is not given."""
DEFAULT_STRIDE = 7

STREAMS_STICKY = "streams-sticky"
"""The bench's name for the streams task assignor (``sticky`` in ``TASK_ASSIGNORS``; renamed
so as not to be confused with a consumer group assignor)."""


@dataclass(frozen=True, slots=True)
class BenchCase:
    assignor: str
    members: int
    topics: int
    partitions_per_topic: int
    subscriptions: str = "homogeneous"
    incremental: bool = False
    racks: int = 0
    members_per_process: int = 2
    """streams-sticky only: threads per Streams process."""
    standby_replicas: int = 0
    """streams-sticky only: ``num.standby.replicas``."""
    remove: bool = False
    """streams-sticky incremental only: one member leaves instead of one joining."""
    window: int | None = None
    """overlapping and random only: topics per member (``None``: :data:`DEFAULT_WINDOW`)."""
    stride: int = DEFAULT_STRIDE
    """overlapping only: member ``i``'s topics start at ``stride * i``."""

    @property
    def topics_per_member(self) -> int | None:
        """Topics each member subscribes to for overlapping and random, else ``None``."""
        if self.subscriptions not in DEFAULT_WINDOW:
            return None
        window = DEFAULT_WINDOW[self.subscriptions] if self.window is None else self.window
        return min(window, self.topics)


def _subscriptions(
    count: int, topic_ids: list[uuid.UUID], case: BenchCase, seed: int
) -> list[list[uuid.UUID]]:
    kind = case.subscriptions
    if kind == "homogeneous":
        return [topic_ids] * count
    if kind not in SUBSCRIPTIONS:
        raise ValueError(f"unknown subscription pattern {kind!r}")
    window = case.topics_per_member
    if window is not None:
        if window < 1:
            raise ValueError("window must be at least 1")
        topics = len(topic_ids)
        if kind == "overlapping":
            return [
                [topic_ids[(case.stride * i + j) % topics] for j in range(window)]
                for i in range(count)
            ]
        rng = random.Random(f"random subscriptions {seed}")
        return [rng.sample(topic_ids, window) for _ in range(count)]
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
    # the new patterns also draw the joining member's subscription (Kafka's buckets do not)
    subs = _subscriptions(
        count if case.topics_per_member is None else case.members, topic_ids, case, seed
    )
    members = [MemberSpec(f"member{i}", subs[i], rack=rack(i)) for i in range(count)]
    spec = AssignmentSpec.build(members, topics, lags=lags)
    if not case.incremental:
        return spec
    first = assignor.assign(spec).members
    members = [
        MemberSpec(m.member_id, m.subscribed_topic_ids, rack=m.rack, assignment=first[m.member_id])
        for m in members
    ]
    if case.subscriptions == "heterogeneous":
        new_subs = subs[case.members - 2]
    elif case.topics_per_member is not None:
        new_subs = subs[case.members - 1]
    else:
        new_subs = topic_ids
    members.append(MemberSpec("newMember", new_subs, rack=rack(case.members - 1)))
    return AssignmentSpec.build(members, topics, lags=lags)


def build_task_spec(
    case: BenchCase, assignor: StickyTaskAssignor | None = None
) -> TaskAssignmentSpec:
    """The streams-sticky spec the benchmark times (an incremental case runs ``assignor``
    once here to get the previous target)."""
    if case.members_per_process < 1:
        raise ValueError("members_per_process must be at least 1")
    if case.incremental and case.members < 2:
        raise ValueError("an incremental case needs at least 2 members")
    if case.remove and not case.incremental:
        raise ValueError("remove needs incremental")
    subtopologies = tuple(
        SubtopologyTasks(f"topic-{i}_subtopology", case.partitions_per_topic, i % 2 == 0)
        for i in range(case.topics)
    )
    count = case.members - 1 if case.incremental and not case.remove else case.members
    members = tuple(
        TaskMember(f"member-{i}", f"process-{i // case.members_per_process}")
        for i in range(count)
    )
    spec = TaskAssignmentSpec(members, subtopologies, case.standby_replicas)
    if not case.incremental:
        return spec
    first = (assignor or StickyTaskAssignor()).assign(spec)
    members = tuple(
        TaskMember(m.member_id, m.process_id, first.member(m.member_id).active,
                   first.member(m.member_id).standby)
        for m in members
    )
    if case.remove:
        members = members[:-1]
    else:
        members = (*members, TaskMember("newMember", "process-newMember"))
    return TaskAssignmentSpec(members, subtopologies, case.standby_replicas)
