"""A streams group's task assignment as a picklable job, and what a worker does with it
(seed 000's offload for streams groups; Kafka 4.3 always runs it inline).

The job holds the members (process id and previous target by role), the configured
subtopologies (number of tasks, stateful or not) and ``num.standby.replicas``. The worker
answers only the members whose target changed or who had none.

This module imports only the assignors and the standard library: it is what worker processes
load.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from dataclasses import dataclass

from assignors import SubtopologyTasks, TaskAssignmentSpec, TaskMember, get_task_assignor

RoleTasks = tuple[tuple[str, tuple[int, ...]], ...]
"""Tasks of one role as (subtopology id, partitions) pairs, sorted."""
MemberTasks = tuple[RoleTasks, RoleTasks, RoleTasks]
"""(active, standby, warm-up)."""


def pack(tasks: Mapping[str, frozenset[int]]) -> RoleTasks:
    return tuple((s, tuple(sorted(p))) for s, p in sorted(tasks.items()) if p)


def unpack(pairs: RoleTasks) -> dict[str, frozenset[int]]:
    return {s: frozenset(p) for s, p in pairs if p}


@dataclass(frozen=True, slots=True)
class TaskAssignorJob:
    group_id: str
    group_epoch: int
    assignor: str
    member_ids: tuple[str, ...]
    process_ids: tuple[str, ...]
    targets: tuple[MemberTasks | None, ...]
    """Each member's previous target; None when it has none yet."""
    subtopologies: tuple[tuple[str, int, bool], ...]
    """(subtopology id, number of tasks, stateful)."""
    num_standby_replicas: int = 0


@dataclass(frozen=True, slots=True)
class TaskJobResult:
    changed: tuple[tuple[str, MemberTasks], ...]
    """(member id, new target) for every member whose target changed or was never written."""
    assign_ms: float
    moved: int = 0
    """Active tasks given to members whose target did not have them (the metric)."""


def run_task_job(job: TaskAssignorJob) -> TaskJobResult:
    """Run the job's task assignor (in a worker, or inline)."""
    started = time.perf_counter()
    empty: MemberTasks = ((), (), ())
    members = tuple(
        TaskMember(member_id, process_id, unpack(target[0]), unpack(target[1]),
                   unpack(target[2]))
        for member_id, process_id, target in zip(
            job.member_ids, job.process_ids, (t or empty for t in job.targets), strict=True))
    spec = TaskAssignmentSpec(members, tuple(SubtopologyTasks(s, n, stateful)
                                             for s, n, stateful in job.subtopologies),
                              job.num_standby_replicas)
    result = get_task_assignor(job.assignor).assign(spec)
    changed: list[tuple[str, MemberTasks]] = []
    moved = 0
    for member_id, old in zip(job.member_ids, job.targets, strict=True):
        roles = result.members.get(member_id)
        new: MemberTasks = empty if roles is None else (
            pack(roles.active), pack(roles.standby), pack(roles.warmup))
        if old is None or new != old:
            changed.append((member_id, new))
            before = unpack(old[0]) if old is not None else {}
            moved += sum(len(set(p) - before.get(s, frozenset())) for s, p in new[0])
    return TaskJobResult(tuple(changed), (time.perf_counter() - started) * 1000.0, moved)
