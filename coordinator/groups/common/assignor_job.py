"""An assignor run as a compact, picklable job, and what a worker does with it (seed 000).

The job holds indexes, not object graphs: topics are numbered in name order and members refer
to a shared table of distinct subscriptions; each member's current target is packed into bytes
(topic index, partition count, partitions, as unsigned 32-bit integers), which pickle as a copy
(pickling the same targets as tuples of frozensets took ~10 ms of the event loop at 50,000
partitions). No topic id (``uuid.UUID``) crosses the process boundary: the coordinator keeps the
index -> id table. The worker answers only the members whose target changed.

This module imports only the assignors and the standard library: it is what worker processes
load.
"""

from __future__ import annotations

import time
import uuid
from array import array
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol, cast

from assignors import (
    SHARE_ASSIGNORS,
    AssignmentSpec,
    MemberSpec,
    PartitionAssignor,
    PartitionOffsets,
    Partitions,
    TopicId,
    TopicMetadata,
    get_assignor,
)

TopicIndexAssignment = tuple[tuple[int, frozenset[int]], ...]
"""A member's partitions as (topic index, partitions) pairs."""


@dataclass(frozen=True, slots=True)
class AssignorJob:
    group_id: str
    group_epoch: int
    assignor: str
    topic_names: tuple[str, ...]
    partition_counts: tuple[int, ...]
    subscriptions: tuple[tuple[int, ...], ...]
    member_ids: tuple[str, ...]
    instance_ids: tuple[str | None, ...]
    racks: tuple[str | None, ...]
    member_subscriptions: tuple[int, ...]
    targets: tuple[bytes | None, ...]
    """Each member's current target (``pack_target``); None when it has no target record
    yet."""
    offsets: tuple[PartitionOffsets | None, ...] = ()
    """Per topic index, for the lag assignor: log start/end and committed offsets."""
    options: tuple[tuple[str, object], ...] = ()
    """Assignor options (the lag assignor's broker configs)."""


@dataclass(frozen=True, slots=True)
class JobResult:
    changed: tuple[tuple[str, TopicIndexAssignment], ...]
    """(member id, new target) for every member whose target changed or was never written."""
    assign_ms: float
    moved: int = 0
    """Partitions given to members whose target did not have them (the metric)."""


@dataclass(frozen=True, slots=True)
class PreparedJob:
    """The job and what stays in the coordinator to read its answer."""

    job: AssignorJob
    topic_ids: tuple[uuid.UUID, ...]


class _Member(Protocol):
    """What ``build_job`` reads of a member (``ConsumerGroupMember`` fits)."""

    @property
    def member_id(self) -> str: ...
    @property
    def instance_id(self) -> str | None: ...
    @property
    def rack_id(self) -> str | None: ...
    @property
    def subscribed_topic_names(self) -> tuple[str, ...]: ...


class _Topic(Protocol):
    """What ``build_job`` reads of a topic (``SubscribedTopic`` fits)."""

    @property
    def topic_id(self) -> uuid.UUID: ...
    @property
    def partitions(self) -> int: ...


class TargetIndexCache:
    """Members' current targets as (topic index, partitions) pairs, kept between the jobs of
    one group: a target is replaced, never changed in place, so a member whose target is the
    same object as last time reuses its pairs (converting a thousand members' targets again
    costs ~9 ms of the event loop, mostly hashing topic ids)."""

    def __init__(self) -> None:
        self.names: tuple[str, ...] = ()
        self.entries: dict[str, tuple[object, bytes]] = {}


def build_job(group_id: str, group_epoch: int, assignor: str,
              members: Mapping[str, _Member],
              targets: Mapping[str, Mapping[uuid.UUID, frozenset[int]]],
              metadata: Mapping[str, _Topic],
              offsets: Mapping[str, PartitionOffsets] | None = None,
              options: tuple[tuple[str, object], ...] = (),
              cache: TargetIndexCache | None = None) -> PreparedJob:
    """The job for ``members`` (as they will be) starting from their current ``targets``."""
    names = tuple(sorted(metadata))
    name_index = {name: i for i, name in enumerate(names)}
    topic_ids = tuple(metadata[name].topic_id for name in names)
    # By the ids' integers: hashing a ``uuid.UUID`` runs Python code, an int's does not.
    id_index = {topic_id.int: i for i, topic_id in enumerate(topic_ids)}
    cache = cache if cache is not None else TargetIndexCache()
    if cache.names != names:
        cache.names, cache.entries = names, {}
    cached = cache.entries
    kept: dict[str, tuple[object, bytes]] = {}
    subscriptions: list[tuple[int, ...]] = []
    seen: dict[tuple[str, ...], int] = {}
    member_ids: list[str] = []
    instances: list[str | None] = []
    racks: list[str | None] = []
    member_subs: list[int] = []
    current: list[bytes | None] = []
    by_object: dict[int, int] = {}  # the members hold the lists, so ids stay theirs
    for member_id in sorted(members):
        member = members[member_id]
        key = member.subscribed_topic_names
        sub = by_object.get(id(key))
        if sub is None:
            sub = seen.get(key)
        if sub is None:
            sub = seen[key] = len(subscriptions)
            subscriptions.append(tuple(sorted(name_index[n] for n in key if n in name_index)))
        by_object[id(key)] = sub
        member_ids.append(member_id)
        instances.append(member.instance_id)
        racks.append(member.rack_id)
        member_subs.append(sub)
        target = targets.get(member_id)
        if target is None:
            current.append(None)
            continue
        entry = cached.get(member_id)
        if entry is None or entry[0] is not target:
            entry = (target, _pack_indexed(target, id_index))
        kept[member_id] = entry
        current.append(entry[1])
    cache.entries = kept
    job = AssignorJob(group_id, group_epoch, assignor, names,
                      tuple(metadata[name].partitions for name in names), tuple(subscriptions),
                      tuple(member_ids), tuple(instances), tuple(racks), tuple(member_subs),
                      tuple(current),
                      () if offsets is None else tuple(offsets.get(name) for name in names),
                      options)
    return PreparedJob(job, topic_ids)


_ASSIGNORS: dict[str, PartitionAssignor] = {}


def _pack_indexed(target: Mapping[uuid.UUID, frozenset[int]], id_index: Mapping[int, int]
                  ) -> bytes:
    """``pack_target`` of a target keyed by topic id (topics not in ``id_index`` dropped)."""
    flat: list[int] = []
    for topic_id, partitions in target.items():
        index = id_index.get(topic_id.int)
        if index is not None:
            flat.append(index)
            flat.append(len(partitions))
            flat.extend(partitions)
    return array("I", flat).tobytes()


def pack_target(pairs: Iterable[tuple[int, Iterable[int]]]) -> bytes:
    """A target as bytes: for each topic, its index, its partition count, its partitions."""
    flat: list[int] = []
    for topic, partitions in pairs:
        values = list(partitions)
        flat.append(topic)
        flat.append(len(values))
        flat.extend(values)
    return array("I", flat).tobytes()


def unpack_target(data: bytes) -> dict[int, frozenset[int]]:
    values = array("I")
    values.frombytes(data)
    out, i, end = {}, 0, len(values)
    while i < end:
        count = values[i + 1]
        out[values[i]] = frozenset(values[i + 2:i + 2 + count])
        i += 2 + count
    return out


def run_job(job: AssignorJob) -> JobResult:
    """Run the job's assignor (in a worker, or inline in tests)."""
    started = time.perf_counter()
    assignor = _ASSIGNORS.get(job.assignor)
    if assignor is None:
        assignor = _ASSIGNORS[job.assignor] = get_assignor(job.assignor)
    subscriptions = job.subscriptions
    current = [None if target is None else unpack_target(target) for target in job.targets]
    # Topic ids here are topic indexes. The casts (to and from the assignors' ``TopicId``, any
    # hashable) are needed because a Mapping's key type is invariant: a ``dict[int, ...]`` is
    # no ``Mapping[TopicId, ...]`` to mypy, and the assignor answers with the topic ids given.
    given = cast("list[Mapping[TopicId, frozenset[int]] | None]", current)
    specs = [
        MemberSpec(member_id=member_id, subscribed_topic_ids=subscriptions[sub],
                   instance_id=instance, rack=rack, assignment=target or {})
        for member_id, instance, rack, sub, target in zip(
            job.member_ids, job.instance_ids, job.racks, job.member_subscriptions, given,
            strict=True)
    ]
    topics = [TopicMetadata(topic_id=i, name=name, partition_count=count)
              for i, (name, count) in enumerate(zip(job.topic_names, job.partition_counts,
                                                    strict=True))]
    offsets: dict[TopicId, PartitionOffsets] = {
        i: value for i, value in enumerate(job.offsets) if value is not None}
    result = assignor.assign(AssignmentSpec.build(specs, topics, offsets=offsets or None,
                                                  options=dict(job.options),
                                                  shared=job.assignor in SHARE_ASSIGNORS))
    member_of = cast("Callable[[str], Mapping[int, Partitions]]", result.member)
    changed: list[tuple[str, TopicIndexAssignment]] = []
    moved = 0
    for member_id, target in zip(job.member_ids, current, strict=True):
        new = {t: frozenset(p) for t, p in member_of(member_id).items() if p}
        old = target or {}
        if target is None or new != old:
            changed.append((member_id, tuple(sorted(new.items()))))
            moved += sum(len(p - old.get(t, frozenset())) for t, p in new.items())
    return JobResult(tuple(changed), (time.perf_counter() - started) * 1000.0, moved)


def to_assignment(pairs: Sequence[tuple[int, frozenset[int]]], topic_ids: Sequence[uuid.UUID]
                  ) -> dict[uuid.UUID, frozenset[int]]:
    return {topic_ids[t]: p for t, p in pairs if p}
