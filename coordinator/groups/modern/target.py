"""When a new target assignment is due (seed 000's batching, one rule for every group type):
the target lags the group epoch, and the last computation (its finish time is the target
assignment metadata record's ``Timestamp``; 0 when unknown) finished at least the group's
``<type>.assignment.interval.ms`` ago. Each type's ``target`` module builds the target."""

from __future__ import annotations

from typing import Any


def interval_passed(last_ms: int, now_ms: int, interval_ms: int) -> bool:
    """Whether ``interval_ms`` passed since the computation that finished at ``last_ms``
    (always, when that time is unknown)."""
    return last_ms <= 0 or now_ms - last_ms >= interval_ms


def assignment_due(group: Any, group_epoch: int, now_ms: int, interval_ms: int) -> bool:
    """Whether a new target must be computed now for ``group`` at ``group_epoch``."""
    if group_epoch <= group.assignment_epoch:
        return False
    return interval_passed(group.assignment_timestamp, now_ms, interval_ms)
