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
from typing import Any, Protocol, cast

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
    partition_racks: tuple[tuple[tuple[str, ...], ...] | None, ...] = ()
    """Per topic index, each partition's racks (empty: no rack data)."""


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
    """What one group's jobs share from one run to the next, so that a run of a large group
    costs the event loop about what changed since the last, not a pass over every member's
    state (a job of 1,000 members over 1,000 topics with a few members changed: ~1.0 -> ~0.55 ms):

    * the topic table (names in order, their indexes, ids and partition counts), kept while
      the subscription metadata is equal to the one it was made from;
    * the topic indexes of each distinct subscription;
    * per member, its job row (member id, instance id, rack, subscription, packed target),
      kept while the member and its target are the same objects as last time (both are
      replaced, never changed in place), so a member whose target did not change is not packed
      again (converting a thousand members' targets costs ~9 ms, mostly hashing topic ids)."""

    def __init__(self) -> None:
        self.topics: _TopicTable | None = None
        self.entries: dict[str, _Entry] = {}
        """By member id: (the member, its target, its row)."""
        self.subscriptions: dict[tuple[str, ...], tuple[int, ...]] = {}
        """Topic indexes of each distinct subscription of the last job."""


_Row = tuple[str, "str | None", "str | None", "tuple[str, ...]", "bytes | None"]
"""A member's part of the job: id, instance id, rack, subscribed names, packed target."""
_Entry = tuple[object, object, _Row]


@dataclass(frozen=True, slots=True)
class _TopicTable:
    metadata: dict[str, object]
    """A copy of the subscription metadata the table was made from (compared by equality:
    values are immutable, so an equal mapping holds the same topics)."""
    names: tuple[str, ...]
    name_index: dict[str, int]
    topic_ids: tuple[uuid.UUID, ...]
    id_index: dict[int, int]
    """Topic index by the id's integer: hashing a ``uuid.UUID`` runs Python code, an int's
    does not."""
    partition_counts: tuple[int, ...]


def _topic_table(metadata: Mapping[str, _Topic], cache: TargetIndexCache) -> _TopicTable:
    """The topic table of ``metadata``: the cache's if it was made from an equal mapping.
    When the topic indexes change (a topic added or removed, or a name now of another topic),
    the packed targets and subscriptions kept are dropped."""
    table = cache.topics
    if table is not None and table.metadata == metadata:
        return table
    names = tuple(sorted(metadata))
    topic_ids = tuple(metadata[name].topic_id for name in names)
    if table is None or table.names != names or table.topic_ids != topic_ids:
        cache.entries, cache.subscriptions = {}, {}
    table = cache.topics = _TopicTable(
        dict(metadata), names, {name: i for i, name in enumerate(names)}, topic_ids,
        {topic_id.int: i for i, topic_id in enumerate(topic_ids)},
        tuple(metadata[name].partitions for name in names))
    return table


def build_job(group_id: str, group_epoch: int, assignor: str,
              members: Mapping[str, _Member],
              targets: Mapping[str, Mapping[uuid.UUID, frozenset[int]]],
              metadata: Mapping[str, _Topic],
              offsets: Mapping[str, PartitionOffsets] | None = None,
              options: tuple[tuple[str, object], ...] = (),
              cache: TargetIndexCache | None = None,
              partition_racks: Callable[[str, int], Any] | None = None) -> PreparedJob:
    """The job for ``members`` (as they will be) starting from their current ``targets``;
    ``partition_racks``: each partition's racks (``coordinator.cluster.racks``), None: none."""
    cache = cache if cache is not None else TargetIndexCache()
    table = _topic_table(metadata, cache)
    names = table.names
    cached = cache.entries
    ids = sorted(members)
    entries: list[_Entry | None] = [cached.get(member_id) for member_id in ids]
    for i in [i for i, (member_id, entry) in enumerate(zip(ids, entries, strict=True))
              if entry is None or entry[0] is not members[member_id]
              or entry[1] is not targets.get(member_id)]:  # the members that changed
        member_id, entry = ids[i], entries[i]
        member, target = members[member_id], targets.get(member_id)
        if target is None:
            packed = None
        elif entry is not None and entry[1] is target:
            packed = entry[2][4]
        else:
            packed = _pack_indexed(target, table.id_index)
        entries[i] = (member, target, (member_id, member.instance_id, member.rack_id,
                                       member.subscribed_topic_names, packed))
    done = cast("list[_Entry]", entries)  # every entry is set now
    cache.entries = dict(zip(ids, done, strict=True))
    columns: list[tuple[Any, ...]] = list(zip(*(entry[2] for entry in done), strict=True))
    member_ids, instances, racks, keys, current = columns if columns else [()] * 5
    # Members with equal subscriptions mostly share the tuple (interned): one index per
    # object, then per distinct value, in order of first appearance.
    by_object = {id(key): key for key in keys}
    seen: dict[tuple[str, ...], int] = {}
    subscriptions: list[tuple[int, ...]] = []
    index_of: dict[int, int] = {}
    name_index = table.name_index
    known, cache.subscriptions = cache.subscriptions, {}
    for object_id, key in by_object.items():
        sub = seen.get(key)
        if sub is None:
            sub = seen[key] = len(subscriptions)
            indexes = known.get(key)
            if indexes is None:
                indexes = tuple(sorted(name_index[n] for n in key if n in name_index))
            cache.subscriptions[key] = indexes
            subscriptions.append(indexes)
        index_of[object_id] = sub
    job = AssignorJob(group_id, group_epoch, assignor, names, table.partition_counts,
                      tuple(subscriptions), member_ids, instances, racks,
                      tuple([index_of[id(key)] for key in keys]), current,
                      () if offsets is None else tuple(offsets.get(name) for name in names),
                      options,
                      () if partition_racks is None else tuple(
                          partition_racks(name, count) for name, count in zip(
                          names, table.partition_counts, strict=True)))
    return PreparedJob(job, table.topic_ids)


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
    racks = job.partition_racks or (None,) * len(job.topic_names)
    topics = [TopicMetadata(topic_id=i, name=name, partition_count=count, partition_racks=rack)
              for i, (name, count, rack) in enumerate(zip(
                  job.topic_names, job.partition_counts, racks, strict=True))]
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
