"""Assignors by name: ``group.consumer.assignors`` (consumer groups) and share groups."""

from __future__ import annotations

from assignors.base import PartitionAssignor
from assignors.lag import LagAssignor
from assignors.range_assignor import RangeAssignor
from assignors.simple import SimpleAssignor
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


class UnknownAssignorError(KeyError):
    """No assignor has this name (the coordinator answers UNSUPPORTED_ASSIGNOR)."""


def get_assignor(name: str, **options: object) -> PartitionAssignor:
    """A new assignor instance by name, consumer or share group one; ``options`` go to its
    constructor (lag only)."""
    cls = ASSIGNORS.get(name) or SHARE_ASSIGNORS.get(name)
    if cls is None:
        raise UnknownAssignorError(name)
    return cls(**options)
