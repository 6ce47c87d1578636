"""The target assignment of a streams group: when a new one may be computed (seed 000's
interval, after the initial rebalance delay), the task assignor job (run inline, or offloaded
to the background executor), and the records of its result (Kafka's ``TargetAssignmentBuilder``
for streams: a record for every member whose target changed or who had none, then the target
metadata with the epoch and the time the computation finished).

A topology that is not configured (missing source or internal topics) gets every member an
empty target without running the assignor, as in Kafka.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from coordinator.groups.common.offload import (
    AssignorRun,
    Offloader,
    install_result,
    start_run_effect,
)
from coordinator.groups.modern.settings import ImbalancePolicy
from coordinator.groups.modern.target import changed_targets, interval_passed
from coordinator.observability import sensors
from coordinator.observability.logs import get_logger
from coordinator.runtime import Result
from coordinator.runtime.result import Record

from . import imbalance, records
from .model import EMPTY_TASKS, StreamsGroup, StreamsGroupMember, TasksTuple
from .task_job import MemberTasks, TaskAssignorJob, TaskJobResult, pack, run_task_job, unpack

log = get_logger("coordinator.groups.streams")

ASSIGNOR = "sticky"
"""Kafka 4.3's only streams task assignor."""
NUM_STANDBY_REPLICAS = "num.standby.replicas"

INITIAL_DELAY_DETAIL = "Assignment delayed due to the configured initial rebalance delay."
INTERVAL_DETAIL = "Assignment delayed due to the configured assignment interval."
IN_FLIGHT_DETAIL = "Assignment delayed due to an in-flight assignment computation."


def interval_allows(group: StreamsGroup, now_ms: int, interval_ms: int) -> bool:
    """Kafka's ``canComputeNextTargetAssignment``: no target time known yet, the escape hatch
    interval 0, or the interval since the last computation has passed."""
    return interval_ms == 0 or interval_passed(group.assignment_timestamp, now_ms, interval_ms)


@dataclass(frozen=True, slots=True)
class PreparedTaskJob:
    job: TaskAssignorJob


def prepare(group: StreamsGroup, group_epoch: int, members: Mapping[str, StreamsGroupMember],
            configured: Any, num_standby: int) -> PreparedTaskJob:
    """The task assignor job for ``members`` (as they will be) from their previous targets."""
    member_ids = tuple(sorted(members))
    targets: list[MemberTasks | None] = []
    for member_id in member_ids:
        target = group.target.get(member_id)
        targets.append(None if target is None else (
            pack(target.active), pack(target.standby), pack(target.warmup)))
    subtopologies: tuple[tuple[str, int, bool], ...] = ()
    if configured is not None and configured.is_ready:
        subtopologies = tuple((s.subtopology_id, s.num_tasks, s.stateful)
                              for _, s in sorted(configured.subtopologies.items()))
    return PreparedTaskJob(TaskAssignorJob(
        group.group_id, group_epoch, ASSIGNOR, member_ids,
        tuple(members[m].process_id for m in member_ids), tuple(targets), subtopologies,
        num_standby))


def run_inline(prepared: PreparedTaskJob) -> TaskJobResult:
    return run_task_job(prepared.job)


def to_tasks(member_tasks: MemberTasks) -> TasksTuple:
    return TasksTuple(unpack(member_tasks[0]), unpack(member_tasks[1]), unpack(member_tasks[2]))


def target_records(group: StreamsGroup, changed: Sequence[tuple[str, MemberTasks]],
                   members: Mapping[str, Any]) -> tuple[dict[str, TasksTuple], list[Record]]:
    """The new targets of the members still in ``members`` and their records."""
    return changed_targets(group, changed, members, to_tasks,
                           lambda old, new: old.same_tasks(new), records.target_member)


def compute_inline(group: StreamsGroup, prepared: PreparedTaskJob,
                   members: Mapping[str, StreamsGroupMember], now_ms: int,
                   policy: ImbalancePolicy | None = None,
                   bump: Callable[[int], Record] | None = None
                   ) -> tuple[dict[str, TasksTuple], list[Record]]:
    """Run the assignor now; the new targets by member and the records (the target metadata
    last, with the computation's finish time). ``policy``: the group's seed 004 policies
    (``imbalance``), if on; ``bump(epoch)``: the group metadata record at the next epoch, when
    they ask for another round."""
    outcome = run_inline(prepared)
    changed: Sequence[tuple[str, MemberTasks]] = outcome.changed
    held: list[Record] = []
    if policy is not None:
        proposal = {m: group.target_of(m) for m in members}
        proposal.update((m, to_tasks(tasks)) for m, tasks in changed if m in members)
        epoch = prepared.job.group_epoch
        resolved, held, next_round = imbalance.apply(group, epoch, proposal, policy, now_ms)
        if next_round and bump is not None:
            held.append(bump(epoch + 1))
            log.info("bumped group epoch", group_id=group.group_id, group_epoch=epoch + 1,
                     reason="imbalance resolution: another round")
        changed = [(m, (pack(t.active), pack(t.standby), pack(t.warmup)))
                   for m, t in resolved.items()]
    new, out = target_records(group, changed, members)
    job = prepared.job
    out.append(records.target_metadata(group.group_id, job.group_epoch, now_ms))
    out += held
    sensors.record_assignment(group.group_id, job.assignor, outcome.assign_ms, outcome.moved)
    log.info("computed target assignment", group_id=group.group_id,
             assignment_epoch=job.group_epoch, members=len(members),
             assign_ms=round(outcome.assign_ms, 2))
    return new, out


def target_of(group: StreamsGroup, new: Mapping[str, TasksTuple], member_id: str
              ) -> TasksTuple:
    return new.get(member_id) or group.target.get(member_id) or EMPTY_TASKS


# ------------------------------------------------------------------------------ offload
def start_effect(shard: Any, group_id: str, prepared: PreparedTaskJob, offloader: Offloader
                 ) -> Callable[[], None]:
    """The effect that starts the group's offloaded run (``common.offload``)."""
    return start_run_effect(shard, group_id, StreamsGroup, prepared, offloader, install,
                            run_task_job)


def install(shard: Any, now_ms: int, run: AssignorRun, outcome: Any,
            part: tuple[int, int] | None = None) -> Result:
    """The write event for (a chunk of) a finished streams group run."""
    return install_result(shard, now_ms, run, outcome, part, _chunk_records,
                          records.target_metadata)


def _chunk_records(group: StreamsGroup, run: AssignorRun,
                   changed: Sequence[tuple[str, MemberTasks]]) -> list[Record]:
    return target_records(group, changed, group.members)[1]
