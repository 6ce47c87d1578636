"""Broker config names of the assignors' options, with defaults and bounds."""

from __future__ import annotations

from enum import StrEnum

LAG_OFFSET_RESET_CONFIG = "group.consumer.lag.assignor.offset.reset"
"""Lag of a partition without committed offset: ``earliest`` = whole log, ``latest`` = 0."""

LAG_STICKINESS_TOLERANCE_CONFIG = "group.consumer.lag.assignor.stickiness.tolerance"
"""How much worse (as a fraction of a topic's mean lag per member) the lag spread of the
sticky assignment of a topic may be than the fresh greedy one before partitions move."""


class OffsetReset(StrEnum):
    EARLIEST = "earliest"
    LATEST = "latest"


DEFAULT_LAG_OFFSET_RESET = OffsetReset.LATEST
DEFAULT_LAG_STICKINESS_TOLERANCE = 0.2
MIN_LAG_STICKINESS_TOLERANCE = 0.0
MAX_LAG_STICKINESS_TOLERANCE = 10.0


def parse_offset_reset(value: str | OffsetReset) -> OffsetReset:
    try:
        return OffsetReset(str(value.value if isinstance(value, OffsetReset) else value).lower())
    except ValueError:
        raise ValueError(
            f"{LAG_OFFSET_RESET_CONFIG} must be earliest or latest, not {value!r}"
        ) from None


def parse_tolerance(value: str | float) -> float:
    tolerance = float(value)
    if not MIN_LAG_STICKINESS_TOLERANCE <= tolerance <= MAX_LAG_STICKINESS_TOLERANCE:
        raise ValueError(
            f"{LAG_STICKINESS_TOLERANCE_CONFIG} must be in "
            f"[{MIN_LAG_STICKINESS_TOLERANCE}, {MAX_LAG_STICKINESS_TOLERANCE}], not {value!r}"
        )
    return tolerance
