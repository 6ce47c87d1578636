"""What the metrics collector reads of a group, whatever its type (``collector.GroupView``)."""

from __future__ import annotations

from typing import Any

from coordinator.observability.collector import GroupView

from .classic.model import ClassicGroup
from .consumer.model import ConsumerGroup
from .share.model import ShareGroup


def view(group: Any) -> GroupView:
    if isinstance(group, ConsumerGroup):
        return GroupView("consumer", str(group.state).lower(), group_epoch=group.group_epoch,
                         assignment_epoch=group.assignment_epoch)
    if isinstance(group, ClassicGroup):
        return GroupView("classic", group.state.value.lower())
    if isinstance(group, ShareGroup):
        return GroupView("share", group.state.value.lower())
    return GroupView(str(getattr(group, "group_type", type(group).__name__)).lower(), "")
