"""Assignors by name: ``group.consumer.assignors`` (consumer groups), share groups and the
streams groups' task assignors."""

from __future__ import annotations

from assignors.base import PartitionAssignor
from assignors.lag import LagAssignor
from assignors.range_assignor import RangeAssignor
from assignors.simple import SimpleAssignor
from assignors.sticky_task import StickyTaskAssignor
from assignors.uniform import UniformAssignor

ASSIGNORS: dict[str, type[PartitionAssignor]] = {
    UniformAssignor.name: UniformAssignor,
    RangeAssignor.name: RangeAssignor,
    LagAssignor.name: LagAssignor,
}
"""Consumer group assignor classes by name (the values ``group.consumer.assignors`` takes)."""

DEFAULT_ASSIGNORS: tuple[str, ...] = ("uniform", "range")
"""Kafka's default ``group.consumer.assignors``; the first is the group default."""

SHARE_ASSIGNORS: dict[str, type[PartitionAssignor]] = {
    SimpleAssignor.name: SimpleAssignor,
}
"""Share group assignor classes by name (KIP-932). Kept apart from :data:`ASSIGNORS` so
that a consumer group can neither configure nor request one."""

DEFAULT_SHARE_ASSIGNOR = SimpleAssignor.name
"""The share group assignor (Kafka has no config for it: always ``simple``)."""


TASK_ASSIGNORS: dict[str, type[StickyTaskAssignor]] = {
    StickyTaskAssignor.name: StickyTaskAssignor,
}
"""Streams group task assignors by name (KIP-1071; Kafka 4.3 has ``sticky`` only)."""

DEFAULT_TASK_ASSIGNOR = StickyTaskAssignor.name
"""The streams group task assignor."""


class UnknownAssignorError(KeyError):
    """No assignor has this name (the coordinator answers UNSUPPORTED_ASSIGNOR)."""


def get_assignor(name: str, **options: object) -> PartitionAssignor:
    """A new assignor instance by name, consumer or share group one; ``options`` go to its
    constructor (lag only)."""
    cls = ASSIGNORS.get(name) or SHARE_ASSIGNORS.get(name)
    if cls is None:
        raise UnknownAssignorError(name)
    return cls(**options)


def get_task_assignor(name: str) -> StickyTaskAssignor:
    """A streams group task assignor by name."""
    cls = TASK_ASSIGNORS.get(name)
    if cls is None:
        raise UnknownAssignorError(name)
    return cls()
