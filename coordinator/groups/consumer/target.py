"""The target assignment: when a new one is due (seed 000's batching) and how it is built.

Kafka's ``TargetAssignmentBuilder``: the members (with the heartbeating member's update) and
the subscribed topics go to the group's server assignor; the records are only the members whose
target changed, then the target assignment metadata with the group epoch and the time the
computation finished.
"""

from __future__ import annotations

import time
import uuid
from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, cast

from assignors import (
    AssignmentSpec,
    MemberSpec,
    PartitionAssignor,
    PartitionOffsets,
    Partitions,
    TopicId,
    TopicMetadata,
)
from coordinator.groups.modern.settings import ImbalancePolicy
from coordinator.observability import sensors
from coordinator.runtime.result import Record

from . import imbalance, records
from .model import Assignment, ConsumerGroup, ConsumerGroupMember, SubscribedTopic


@dataclass(frozen=True, slots=True)
class TargetResult:
    epoch: int
    assignments: Mapping[str, Assignment]
    records: list[Record]
    assign_ms: float = 0.0
    next_round: bool = False
    """Incremental resolution left moves for a later target (the group epoch is bumped)."""


_IDS_CACHE_SIZE = 64
_ids_cache: OrderedDict[int, tuple[Mapping[str, SubscribedTopic],
                                   dict[tuple[str, ...], frozenset[uuid.UUID]]]] = OrderedDict()


def subscribed_ids(member: ConsumerGroupMember,
                   metadata: Mapping[str, SubscribedTopic]) -> frozenset[uuid.UUID]:
    """Ids of the member's subscribed topics that exist (per the subscription metadata).

    Every heartbeat asks, and a large group's members subscribe to hundreds of topics from a
    few distinct lists: answers are kept per subscription metadata object (replaced, never
    changed in place, when the group's subscribed topics change) and topic list."""
    names = member.subscribed_topic_names
    entry = _ids_cache.get(id(metadata))
    if entry is None or entry[0] is not metadata:
        entry = (metadata, {})
        _ids_cache[id(metadata)] = entry
        if len(_ids_cache) > _IDS_CACHE_SIZE:
            _ids_cache.popitem(last=False)
    else:
        _ids_cache.move_to_end(id(metadata))
    ids = entry[1].get(names)
    if ids is None:
        found = (metadata.get(name) for name in names)
        ids = entry[1][names] = frozenset(t.topic_id for t in found if t is not None)
    return ids


def build_target(group: ConsumerGroup, group_epoch: int, members: Mapping[str, ConsumerGroupMember],
                 targets: Mapping[str, Assignment], metadata: Mapping[str, SubscribedTopic],
                 assignor: PartitionAssignor, now_ms: int,
                 offsets: Mapping[str, PartitionOffsets] | None = None,
                 options: Mapping[str, object] | None = None,
                 policy: ImbalancePolicy | None = None,
                 racks: Callable[[str, int], Any] | None = None) -> TargetResult:
    """A new target assignment at ``group_epoch`` for ``members`` (the group's members as they
    will be after this event), starting from their current ``targets``; the assignor's answer
    goes through the group's imbalance ``policy`` (``imbalance``), if on or partitions are
    held; ``racks``: each partition's racks, for the rack-aware assignors."""
    # The casts (to and from the assignors' ``TopicId``, any hashable) are needed because a
    # Mapping's key type is invariant: an ``Assignment`` (keyed by ``uuid.UUID``) is no
    # ``Mapping[TopicId, ...]`` to mypy, and the assignor answers with the topic ids given.
    current = cast("Mapping[str, Mapping[TopicId, frozenset[int]]]", targets)
    specs = [
        MemberSpec(member_id=m.member_id, subscribed_topic_ids=subscribed_ids(m, metadata),
                   instance_id=m.instance_id, rack=m.rack_id,
                   assignment=current.get(m.member_id, {}))
        for m in members.values()
    ]
    topics = [TopicMetadata(topic_id=t.topic_id, name=t.name, partition_count=t.partitions,
                            partition_racks=None if racks is None else racks(t.name, t.partitions))
              for t in metadata.values()]
    started = time.perf_counter()
    by_id: dict[TopicId, PartitionOffsets] | None = None if offsets is None else {
        metadata[name].topic_id: value for name, value in offsets.items() if name in metadata}
    result = assignor.assign(AssignmentSpec.build(specs, topics, offsets=by_id, options=options))
    member_of = cast("Callable[[str], Mapping[uuid.UUID, Partitions]]", result.member)
    assign_ms = (time.perf_counter() - started) * 1000.0
    proposal = {member_id: {t: frozenset(p) for t, p in member_of(member_id).items() if p}
                for member_id in members}
    applied = None
    if policy is not None and (policy.on or group.held):
        applied = imbalance.apply(group, group_epoch, targets, proposal,
                                  lambda m: subscribed_ids(members[m], metadata), policy, now_ms)
    assignments = proposal if applied is None else applied.assignments
    new_targets: dict[str, Assignment] = {}
    out: list[Record] = []
    for member_id in members:
        assignment = assignments[member_id]
        old = targets.get(member_id)
        if old is not None and assignment == old and member_id in group.target:
            new_targets[member_id] = old  # unchanged: the same object (see assignment_forms)
            continue
        new_targets[member_id] = assignment
        out.append(records.target_member(group.group_id, member_id, assignment,
                                         group.assignment_forms))
    out.append(records.target_metadata(group.group_id, group_epoch, now_ms))
    sensors.record_assignment(group.group_id, assignor.name, assign_ms,
                                    sensors.partitions_moved(targets, new_targets))
    if applied is not None:
        out += applied.records
    return TargetResult(group_epoch, new_targets, out, assign_ms,
                        applied is not None and applied.next_round)
