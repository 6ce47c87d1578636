"""The replay of the record shapes every KIP-848 group type writes (Kafka's
``GroupMetadataManager.replay`` for its ``<Type>Group...`` records): the group's own record
(epoch), its subscription metadata, the target assignment's metadata (epoch, timestamp) and
members. Each type's ``replay`` module calls these with its group class and what it reads from
the value; what differs stays there (members, current assignments, topologies).

A record may come before its group's metadata record (compaction keeps the latest of each
key, in log order), so every replayer but the tombstones creates the group it needs; a record
for an id held by another type's group replaces it (``members.replayed_group``)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from .members import replayed_group
from .subscription import SubscribedTopic

G = TypeVar("G")


def group_metadata(shard: Any, key: Any, value: Any, group_class: type[G],
                   apply: Callable[[G, Any], None]) -> None:
    """The group's own record: its tombstone deletes the group (of this type only), a value
    is ``apply``'d to the group (created if need be)."""
    if value is None:
        if isinstance(shard.groups.get(key.group_id), group_class):
            del shard.groups[key.group_id]
        return
    group = replayed_group(shard, key.group_id, group_class)
    assert group is not None
    apply(group, value)


def of(shard: Any, key: Any, value: Any, group_class: type[G]) -> G | None:
    """The group a (non-root) record is for: created for a value, None for a tombstone of a
    group that is not there."""
    return replayed_group(shard, key.group_id, group_class, create=value is not None)


def partition_metadata(shard: Any, key: Any, value: Any, group_class: type[Any]) -> None:
    group = of(shard, key, value, group_class)
    if group is None:
        return
    group.subscription_metadata = {} if value is None else {
        t.topic_name: SubscribedTopic(t.topic_id, t.topic_name, t.num_partitions)
        for t in value.topics}


def target_metadata(shard: Any, key: Any, value: Any, group_class: type[Any],
                    no_epoch: int = 0) -> None:
    """The target assignment's epoch and timestamp; ``no_epoch`` once it is tombstoned."""
    group = of(shard, key, value, group_class)
    if group is None:
        return
    group.assignment_epoch = no_epoch if value is None else value.assignment_epoch
    group.assignment_timestamp = 0 if value is None else value.timestamp


def target_member(shard: Any, key: Any, value: Any, group_class: type[Any],
                  assignment: Callable[[Any, Any], Any]) -> None:
    """A member's target assignment: ``assignment(group, value)``, or gone with a tombstone."""
    group = of(shard, key, value, group_class)
    if group is None:
        return
    if value is None:
        group.target.pop(key.member_id, None)
    else:
        group.target[key.member_id] = assignment(group, value)
