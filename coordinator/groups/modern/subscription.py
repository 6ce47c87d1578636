"""Subscription metadata, the topics a group's members subscribe to that exist (the
``<Type>GroupPartitionMetadata`` record; streams groups keep theirs in the topology), and the
group epoch a change of it bumps to."""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any

FIRST_GROUP_EPOCH = 2
"""Seed 000: new groups start at group epoch 2 (epoch 1 is the empty target assignment)."""


@dataclass(frozen=True, slots=True)
class SubscribedTopic:
    """An entry of a group's subscription metadata: a subscribed topic that exists, its id and
    partition count."""

    topic_id: uuid.UUID
    name: str
    partitions: int


def subscription_metadata(names: Iterable[str], topics: Any,
                          current: Mapping[str, SubscribedTopic] | None = None
                          ) -> Mapping[str, SubscribedTopic]:
    """The topics of ``names`` that exist in ``topics`` (a ``TopicLookup``), in that order.
    Entries of ``current`` (the group's) that still describe a topic are reused, and if nothing
    differs ``current`` itself is returned, so an unchanged subscription costs no new objects
    (and keeps the caches keyed on it warm)."""
    current = current or {}
    out = {}
    same = True
    for name in names:
        topic = topics.topic(name)
        if topic is None:
            continue
        old = current.get(name)
        if old is not None and old.partitions == topic.partitions and (
                old.topic_id is topic.topic_id or old.topic_id == topic.topic_id):
            out[name] = old
        else:
            out[name] = SubscribedTopic(topic.topic_id, name, topic.partitions)
            same = False
    if same and len(out) == len(current):
        return current
    return out


def next_group_epoch(group: Any) -> int:
    """The epoch a change of the group's subscriptions or members bumps it to."""
    return FIRST_GROUP_EPOCH if group.group_epoch == 0 else group.group_epoch + 1
