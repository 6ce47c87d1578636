"""Sensors the coordinator's code feeds as things happen: offsets committed, expired and deleted,
rebalances, assignor runs. Each hook is a no-op until a collector attaches its sensors
(``collector.install``), so pure handlers and their tests call them freely.

This module imports only the standard library (and the timeline's hooks beside it, which an
assignor run also feeds): every package of the coordinator may use it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Protocol

from . import timeline


class _Count(Protocol):
    def record(self, value: float = 1.0, /) -> None: ...


class _Observe(Protocol):
    def observe(self, value: float, /) -> None: ...


class _Labelled(Protocol):
    def labels(self, *values: str) -> _Observe: ...


class _CountByLabels(Protocol):
    def record(self, *labels: str) -> None: ...


class Sensors(Protocol):
    """What the hooks feed (``collector.Observability`` has them). Read-only members: the
    hooks only read them, so any sensor that fits will do (a settable member would have to be
    of exactly the protocol's type)."""

    @property
    def offset_commits(self) -> _Count: ...
    @property
    def offsets_expired(self) -> _Count: ...
    @property
    def offset_deletions(self) -> _Count: ...
    @property
    def rebalances(self) -> _Count: ...
    @property
    def share_rebalances(self) -> _Count: ...
    @property
    def streams_rebalances(self) -> _Count: ...
    @property
    def share_acquired(self) -> _Count: ...
    @property
    def share_lock_timeouts(self) -> _Count: ...
    @property
    def share_acknowledgements(self) -> Mapping[str, _Count]: ...
    @property
    def assignor_runs(self) -> _Labelled: ...
    @property
    def partitions_moved(self) -> _Labelled: ...
    @property
    def faults_injected(self) -> _CountByLabels: ...
    @property
    def transactions_completed(self) -> _CountByLabels: ...
    @property
    def cluster_moves(self) -> _CountByLabels: ...


_attached: Sensors | None = None


def attach(sensors: Sensors) -> None:
    global _attached
    _attached = sensors


def detach(sensors: Sensors) -> None:
    global _attached
    if _attached is sensors:
        _attached = None


def record_offset_commits(count: int) -> None:
    """``count`` offsets were committed (durably)."""
    if _attached is not None and count > 0:
        _attached.offset_commits.record(count)


def record_transaction_completed(result: str) -> None:
    """A transaction's markers were written and it completed (``result``: commit, abort)."""
    if _attached is not None:
        _attached.transactions_completed.record(result)


def record_cluster_move(kind: str, reason: str) -> None:
    """A leader or coordinator moved between brokers, or a broker stopped or started
    (``cluster.brokers`` > 1, the control endpoint's ``/brokers`` and moves)."""
    if _attached is not None:
        _attached.cluster_moves.record(kind, reason)


def record_fault_injected(kind: str, api: str) -> None:
    """The control endpoint's fault injection answered (or held, delayed, closed) a request
    (``coordinator/control/faults.py``)."""
    if _attached is not None:
        _attached.faults_injected.record(kind, api)


def record_offsets_expired(count: int) -> None:
    if _attached is not None and count > 0:
        _attached.offsets_expired.record(count)


def record_offsets_deleted(count: int) -> None:
    if _attached is not None and count > 0:
        _attached.offset_deletions.record(count)


def record_rebalance(group_id: str) -> None:
    """A consumer group's epoch was bumped (a new rebalance starts)."""
    if _attached is not None:
        _attached.rebalances.record(1)


def record_streams_rebalance(group_id: str) -> None:
    """A streams group's epoch was bumped by a heartbeat."""
    if _attached is not None:
        _attached.streams_rebalances.record(1)


def record_share_rebalance(group_id: str) -> None:
    """A share group's epoch was bumped."""
    if _attached is not None:
        _attached.share_rebalances.record(1)


SHARE_ACK_TYPES = ("Gap", "Accept", "Release", "Reject")
"""Kafka's ``ackType`` tag values, by acknowledge type byte (0-3)."""


def record_share_acquired(count: int) -> None:
    """``count`` share records were acquired by a member."""
    if _attached is not None and count > 0:
        _attached.share_acquired.record(count)


def record_share_lock_timeouts(count: int) -> None:
    """``count`` acquired share records went back because their acquisition lock expired."""
    if _attached is not None and count > 0:
        _attached.share_lock_timeouts.record(count)


def record_share_acknowledgements(types: Sequence[int], count: int) -> None:
    """An acknowledgement batch of ``count`` offsets with one type, or one type per offset."""
    if _attached is None:
        return
    meters = _attached.share_acknowledgements
    if len(types) == 1:
        meters[SHARE_ACK_TYPES[types[0]]].record(count)
        return
    for ack_type in types:
        meters[SHARE_ACK_TYPES[ack_type]].record(1)


def record_assignment(group_id: str, assignor: str, duration_ms: float, moved: int, *,
                      offloaded: bool = False, epoch: int | None = None) -> None:
    """An assignor run for ``group_id`` took ``duration_ms`` and gave ``moved`` partitions to
    members whose target did not have them (it ran ``offloaded`` or inline; ``epoch``: the
    target's, when known). The rebalance timeline is told too."""
    timeline.note_target(group_id, assignor, duration_ms, offloaded=offloaded, epoch=epoch)
    if _attached is not None:
        _attached.assignor_runs.labels(group_id, assignor).observe(duration_ms)
        _attached.partitions_moved.labels(group_id).observe(moved)


def partitions_moved(before: Mapping[str, Mapping[Any, Iterable[int]]],
                     after: Mapping[str, Mapping[Any, Iterable[int]]]) -> int:
    """How many (topic, partition) each member has in ``after`` but not in ``before``, summed:
    a partition moving from one member to another counts once, a new one counts once."""
    moved = 0
    for member_id, assignment in after.items():
        old = before.get(member_id, {})
        for topic, partitions in assignment.items():
            moved += len(set(partitions) - set(old.get(topic, ())))
    return moved


def record_offloaded_run(job: Any, outcome: Any) -> None:
    """An offloaded run's result (``assignor_job.AssignorJob`` and ``JobResult``): its duration
    in the worker and the partitions it moved relative to the targets it started from (counted
    by the worker, which has both at hand)."""
    record_assignment(job.group_id, job.assignor, outcome.assign_ms, outcome.moved,
                      offloaded=True, epoch=job.group_epoch)
