"""Assignors by name, for ``group.consumer.assignors``."""

from __future__ import annotations

from assignors.base import PartitionAssignor
from assignors.lag import LagAssignor
from assignors.range_assignor import RangeAssignor
from assignors.uniform import UniformAssignor

ASSIGNORS: dict[str, type[PartitionAssignor]] = {
    UniformAssignor.name: UniformAssignor,
    RangeAssignor.name: RangeAssignor,
    LagAssignor.name: LagAssignor,
}
"""Assignor classes by name."""

DEFAULT_ASSIGNORS: tuple[str, ...] = ("uniform", "range")
"""Kafka's default ``group.consumer.assignors``; the first is the group default."""


class UnknownAssignorError(KeyError):
    """No assignor has this name (the coordinator answers UNSUPPORTED_ASSIGNOR)."""


def get_assignor(name: str, **options: object) -> PartitionAssignor:
    """A new assignor instance by name; ``options`` go to its constructor (lag only)."""
    try:
        cls = ASSIGNORS[name]
    except KeyError:
        raise UnknownAssignorError(name) from None
    return cls(**options)
