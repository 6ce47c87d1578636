"""The replay of the record shapes every KIP-848 group type writes (Kafka's
``GroupMetadataManager.replay`` for its ``<Type>Group...`` records). Each function here makes
the replayer (``(shard, offset, key, value)``, as ``coordinator.groups.replay``'s table names
them) of one record shape for one group class; each type's ``replay`` module makes its
replayers with them and says only what it reads from a value: the group's own record (epoch),
its subscription metadata, the target assignment's metadata (epoch, timestamp) and members are
the same for all; members and current assignments differ in what they hold.

A record may come before its group's metadata record (compaction keeps the latest of each
key, in log order), so every replayer but the tombstones creates the group it needs; a record
for an id held by another type's group replaces it (``members.replayed_group``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from .members import replayed_group
from .subscription import SubscribedTopic

G = TypeVar("G")
Replayer = Callable[[Any, int, Any, Any], None]


def group_metadata(group_class: type[G], apply: Callable[[G, Any], None]) -> Replayer:
    """The group's own record: its tombstone deletes the group (of this type only), a value
    is ``apply``'d to the group (created if need be)."""
    def replay(shard: Any, offset: int, key: Any, value: Any) -> None:
        if value is None:
            if isinstance(shard.groups.get(key.group_id), group_class):
                del shard.groups[key.group_id]
            return
        group = replayed_group(shard, key.group_id, group_class)
        assert group is not None
        apply(group, value)

    return replay


def group_record(group_class: type[G], apply: Callable[[G, Any, Any], None]) -> Replayer:
    """Any other record of the group: ``apply(group, key, value)``, the group created for a
    value; a tombstone for a group that is not there does nothing."""
    def replay(shard: Any, offset: int, key: Any, value: Any) -> None:
        group = replayed_group(shard, key.group_id, group_class, create=value is not None)
        if group is not None:
            apply(group, key, value)

    return replay


def partition_metadata(group_class: type[Any]) -> Replayer:
    """``<Type>GroupPartitionMetadata``: the group's subscription metadata."""
    def apply(group: Any, key: Any, value: Any) -> None:
        group.subscription_metadata = {} if value is None else {
            t.topic_name: SubscribedTopic(t.topic_id, t.topic_name, t.num_partitions)
            for t in value.topics}

    return group_record(group_class, apply)


def target_metadata(group_class: type[Any], no_epoch: int = 0) -> Replayer:
    """``<Type>GroupTargetAssignmentMetadata``: the target's epoch and when it was computed;
    ``no_epoch`` once it is tombstoned."""
    def apply(group: Any, key: Any, value: Any) -> None:
        group.assignment_epoch = no_epoch if value is None else value.assignment_epoch
        group.assignment_timestamp = 0 if value is None else value.timestamp

    return group_record(group_class, apply)


def target_member(group_class: type[G], assignment: Callable[[G, Any, Any], Any]) -> Replayer:
    """``<Type>GroupTargetAssignmentMember``: a member's target, ``assignment(group, key,
    value)``, or gone with a tombstone."""
    def apply(group: Any, key: Any, value: Any) -> None:
        if value is None:
            group.target.pop(key.member_id, None)
        else:
            group.target[key.member_id] = assignment(group, key, value)

    return group_record(group_class, apply)
