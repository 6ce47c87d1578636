"""Group administration as pure handlers: describe, list, delete groups, delete offsets."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from coordinator.groups.classic.consumer_protocol import subscribed_topics
from coordinator.groups.classic.model import CONSUMER_PROTOCOL_TYPE, ClassicGroup, ClassicGroupState
from coordinator.groups.consumer import records as consumer_records
from coordinator.groups.consumer.model import ConsumerGroup
from coordinator.groups.share import records as share_records
from coordinator.groups.share import state_records
from coordinator.groups.share.model import SHARE_PROTOCOL_TYPE, ShareGroup
from coordinator.groups.streams import records as streams_records
from coordinator.groups.streams.heartbeat import initial_delay_key
from coordinator.groups.streams.model import STREAMS_PROTOCOL_TYPE, StreamsGroup
from coordinator.runtime import Result
from protocol import ErrorCode
from storage.records import OffsetCommitKey

DEAD = "Dead"


@dataclass(frozen=True, slots=True)
class DescribedMember:
    member_id: str
    group_instance_id: str | None
    client_id: str
    client_host: str
    metadata: bytes
    assignment: bytes


@dataclass(frozen=True, slots=True)
class DescribedGroup:
    group_id: str
    error: ErrorCode
    state: str
    protocol_type: str
    protocol_data: str
    members: tuple[DescribedMember, ...] = ()


@dataclass(frozen=True, slots=True)
class ListedGroup:
    group_id: str
    protocol_type: str
    state: str
    group_type: str


def describe(shard: Any, group_id: str) -> DescribedGroup:
    group = shard.groups.get(group_id)
    if isinstance(group, ShareGroup | StreamsGroup):
        # DescribeGroups knows classic (and consumer) groups only: share and streams groups
        # are not found.
        return DescribedGroup(group_id, ErrorCode.group_id_not_found, DEAD, "", "")
    if group is None:
        if shard.offsets.has_offsets(group_id):
            return DescribedGroup(group_id, ErrorCode.none, ClassicGroupState.EMPTY.value, "", "")
        return DescribedGroup(group_id, ErrorCode.group_id_not_found, DEAD, "", "")
    if not isinstance(group, ClassicGroup):
        describe_other = getattr(group, "describe_as_classic", None)
        if describe_other is not None:
            return describe_other()
        return DescribedGroup(group_id, ErrorCode.none, str(getattr(group, "state", "")),
                              CONSUMER_PROTOCOL_TYPE, "")
    stable = group.state is ClassicGroupState.STABLE
    members = tuple(
        DescribedMember(m.member_id, m.group_instance_id, m.client_id, m.client_host,
                        m.metadata(group.protocol_name or "") if stable else b"",
                        m.assignment if stable else b"")
        for m in group.members.values())
    return DescribedGroup(group_id, ErrorCode.none, group.state.value,
                          group.protocol_type or "",
                          group.protocol_name or "" if stable else "", members)


def list_groups(shard: Any) -> list[ListedGroup]:
    listed = []
    for group_id, group in shard.groups.items():
        if isinstance(group, ClassicGroup):
            listed.append(ListedGroup(group_id, group.protocol_type or "", group.state.value,
                                      "classic"))
        elif isinstance(group, ShareGroup):
            listed.append(ListedGroup(group_id, SHARE_PROTOCOL_TYPE, group.state.value,
                                      SHARE_PROTOCOL_TYPE))
        elif isinstance(group, StreamsGroup):
            listed.append(ListedGroup(group_id, STREAMS_PROTOCOL_TYPE, group.state.value,
                                      STREAMS_PROTOCOL_TYPE))
        else:
            listed.append(ListedGroup(group_id, CONSUMER_PROTOCOL_TYPE,
                                      str(getattr(group, "state", "")),
                                      str(getattr(group, "group_type", "consumer"))))
    for group_id in shard.offsets.groups():
        if group_id not in shard.groups:
            # A group that only committed offsets (a "simple" group) is an empty classic group.
            listed.append(ListedGroup(group_id, "", ClassicGroupState.EMPTY.value, "classic"))
    return listed


def _offset_tombstones(shard: Any, group_id: str,
                       partitions: list[tuple[str, int]] | None = None) -> list[Any]:
    committed = shard.offsets.group(group_id)
    wanted = committed.keys() if partitions is None else [p for p in partitions
                                                           if p in committed]
    return [(OffsetCommitKey(group=group_id, topic=topic, partition=partition), None)
            for topic, partition in wanted]


def delete_group(shard: Any, group_id: str) -> Result:
    group = shard.groups.get(group_id)
    if group is None and not shard.offsets.has_offsets(group_id):
        return Result((), ErrorCode.group_id_not_found)
    if group is not None and not _is_empty(group):
        return Result((), ErrorCode.non_empty_group)
    records = _offset_tombstones(shard, group_id)
    records.extend(shard.offsets.pending_tombstones(group_id))  # as Kafka's deleteAllOffsets
    if isinstance(group, ClassicGroup):
        records.append(group.tombstone())
    elif isinstance(group, StreamsGroup):
        records.extend(streams_records.group_tombstones(group))
        shard.timers.cancel(initial_delay_key(group_id))
    elif isinstance(group, ShareGroup):
        records.extend(share_records.group_tombstones(group))
        records.extend(state_records.tombstone(group_id, topic_id, partition)
                       for topic_id, partition in shard.share_partitions.get(group_id, {}))
    elif isinstance(group, ConsumerGroup):
        records.extend(consumer_records.group_tombstones(group))

    def effect() -> None:
        shard.groups.pop(group_id, None)

    return Result(tuple(records), ErrorCode.none, (), effect)


def _is_empty(group: Any) -> bool:
    if isinstance(group, ClassicGroup):
        return group.state in (ClassicGroupState.EMPTY, ClassicGroupState.DEAD)
    return not getattr(group, "members", None)


def delete_offsets(shard: Any, group_id: str, partitions: list[tuple[str, int]]) -> Result:
    """Response: (top-level error, {partition: error})."""
    group = shard.groups.get(group_id)
    if isinstance(group, ShareGroup) or (group is None
                                         and not shard.offsets.has_offsets(group_id)):
        return Result((), (ErrorCode.group_id_not_found, {}))
    subscribed = _subscribed(group) if group is not None else frozenset()
    errors = {}
    deletable = []
    for topic, partition in partitions:
        if subscribed is None or topic in subscribed:  # None: cannot tell, so keep them
            errors[(topic, partition)] = ErrorCode.group_subscribed_to_topic
        else:
            errors[(topic, partition)] = ErrorCode.none
            deletable.append((topic, partition))
    return Result(tuple(_offset_tombstones(shard, group_id, deletable)),
                  (ErrorCode.none, errors))


def _subscribed(group: Any) -> frozenset[str] | None:
    """Topics a live group is subscribed to (their offsets are not to be deleted), or None
    when a member's subscription does not decode and so nothing can be ruled out."""
    if isinstance(group, ClassicGroup):
        if group.state in (ClassicGroupState.EMPTY, ClassicGroupState.DEAD):
            return frozenset()
        if group.protocol_type != CONSUMER_PROTOCOL_TYPE:
            return frozenset()
        topics: set[str] = set()
        for member in group.members.values():
            member_topics = subscribed_topics(member.metadata(group.protocol_name or ""))
            if member_topics is None:
                return None
            topics |= member_topics
        return frozenset(topics)
    if isinstance(group, StreamsGroup):
        if not group.members or group.topology is None:
            return frozenset()
        return frozenset(group.topology.source_topic_map())
    return frozenset(getattr(group, "subscribed_topic_names", lambda: frozenset())())
