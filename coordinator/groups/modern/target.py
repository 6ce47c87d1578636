"""When a new target assignment is due (seed 000's batching, one rule for every group type):
the target lags the group epoch, and the last computation (its finish time is the target
assignment metadata record's ``Timestamp``; 0 when unknown) finished at least the group's
``<type>.assignment.interval.ms`` ago; and whether the run is offloaded. Each type's
``target`` module builds the target; ``changed_targets`` installs it."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from typing import Any, TypeVar

from coordinator.runtime.result import Record

A = TypeVar("A")


def interval_passed(last_ms: int, now_ms: int, interval_ms: int) -> bool:
    """Whether ``interval_ms`` passed since the computation that finished at ``last_ms``
    (always, when that time is unknown)."""
    return last_ms <= 0 or now_ms - last_ms >= interval_ms


def offloaded(settings: Any, env: Any) -> bool:
    """Whether the group's runs go to the background executor (seed 000's offload): its
    ``<type>.assignor.offload.enable`` says so and the environment has an offloader."""
    return bool(settings.assignor_offload) and env.offloader is not None


def assignment_due(group: Any, group_epoch: int, now_ms: int, interval_ms: int) -> bool:
    """Whether a new target must be computed now for ``group`` at ``group_epoch``."""
    if group_epoch <= group.assignment_epoch:
        return False
    return interval_passed(group.assignment_timestamp, now_ms, interval_ms)


def changed_targets(group: Any, changed: Iterable[tuple[str, Any]], members: Mapping[str, Any],
                    convert: Callable[[Any], A], same: Callable[[A, A], bool],
                    record: Callable[[str, str, A], Record]) -> tuple[dict[str, A], list[Record]]:
    """Kafka's ``TargetAssignmentBuilder`` result for the members still in ``members`` (one that
    left meanwhile loses its share): each changed member's new target (``convert`` of what the
    assignor gave) and the records of those that differ (``same``) from the group's target."""
    new: dict[str, A] = {}
    out: list[Record] = []
    for member_id, assigned in changed:
        if member_id not in members:
            continue
        target = new[member_id] = convert(assigned)
        old = group.target.get(member_id)
        if old is None or not same(old, target):
            out.append(record(group.group_id, member_id, target))
    return new, out
