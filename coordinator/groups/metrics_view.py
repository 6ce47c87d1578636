"""What the metrics collector reads of a group, whatever its type (``collector.GroupView``)."""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator
from typing import Any

from coordinator.observability.collector import GroupView, SharePartitionView

from .classic.model import ClassicGroup
from .consumer.model import ConsumerGroup
from .share.model import ShareGroup
from .streams.model import StreamsGroup


def view(group: Any) -> GroupView:
    if isinstance(group, ConsumerGroup):
        return GroupView("consumer", str(group.state).lower(), group_epoch=group.group_epoch,
                         assignment_epoch=group.assignment_epoch,
                         held_partitions=sum(len(h.items) for h in group.held.values()))
    if isinstance(group, ClassicGroup):
        return GroupView("classic", group.state.value.lower())
    if isinstance(group, ShareGroup):
        return GroupView("share", group.state.value.lower())
    if isinstance(group, StreamsGroup):
        return GroupView("streams", group.state.value.lower(), group_epoch=group.group_epoch,
                         assignment_epoch=group.assignment_epoch)
    return GroupView(str(getattr(group, "group_type", type(group).__name__)).lower(), "")


def share_partitions(shard: Any, topic_name: Callable[[uuid.UUID], str | None]
                     ) -> Iterator[SharePartitionView]:
    """The shard's share partitions (KIP-932) as the metrics read them."""
    for group_id, by_tp in list(shard.share_partitions.items()):
        for (topic_id, partition), sp in list(by_tp.items()):
            yield SharePartitionView(group_id, topic_name(topic_id) or str(topic_id), partition,
                                     sp.in_flight_count(), sp.acquired_count())
