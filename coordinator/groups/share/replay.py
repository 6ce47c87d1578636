"""Replay of share group records into ``CoordinatorShard.groups``: one replayer per record type,
named in ``coordinator.groups.replay``'s table; the shapes every modern group type shares are
replayed by ``modern.replay``, members, current assignments and initialized share partitions
here."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from coordinator.groups.modern import replay as modern_replay
from storage.records import ShareGroupMetadataValue

from .model import ShareGroup, ShareGroupMember
from .records import assignment_of


def _group_metadata(group: ShareGroup, value: ShareGroupMetadataValue) -> None:
    group.group_epoch = value.epoch
    group.metadata_hash = value.metadata_hash


def _member_metadata(group: ShareGroup, key: Any, value: Any) -> None:
    if value is None:
        group.members.pop(key.member_id, None)
        return
    old = group.members.get(key.member_id) or ShareGroupMember(key.member_id)
    group.members[key.member_id] = replace(
        old, rack_id=value.rack_id, client_id=value.client_id, client_host=value.client_host,
        subscribed_topic_names=tuple(value.subscribed_topic_names))


def _current_assignment(group: ShareGroup, key: Any, value: Any) -> None:
    if value is None:
        return  # the member itself goes with its metadata tombstone
    old = group.members.get(key.member_id) or ShareGroupMember(key.member_id)
    group.members[key.member_id] = replace(
        old, member_epoch=value.member_epoch,
        previous_member_epoch=value.previous_member_epoch,
        assigned_partitions=assignment_of(value.assigned_partitions))


def _state_partition_metadata(group: ShareGroup, key: Any, value: Any) -> None:
    group.initialized = {} if value is None else {
        t.topic_id: (t.topic_name, frozenset(t.partitions)) for t in value.initialized_topics}


group_metadata = modern_replay.group_metadata(ShareGroup, _group_metadata)
partition_metadata = modern_replay.partition_metadata(ShareGroup)
member_metadata = modern_replay.group_record(ShareGroup, _member_metadata)
target_metadata = modern_replay.target_metadata(ShareGroup)
target_member = modern_replay.target_member(
    ShareGroup, lambda group, key, value: assignment_of(value.topic_partitions))
current_assignment = modern_replay.group_record(ShareGroup, _current_assignment)
state_partition_metadata = modern_replay.group_record(ShareGroup, _state_partition_metadata)
