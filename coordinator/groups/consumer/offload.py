"""Offloaded assignor runs of consumer groups (seed 000): start one, and install its result.

A run starts as the effect of the heartbeat that found a new target due: the group is marked as
having a run in flight (at most one per group; in memory, not a record) and the job goes to the
offloader. The result comes back as a write event on the group's partition (``install``), which
first applies what changed meanwhile, then writes the target records with the finish time:

* the group was deleted, downgraded or reloaded (not the same group object), or a newer target
  was installed meanwhile: the result is discarded;
* a member left or was fenced: its assignment is dropped;
* a static member was replaced: its assignment goes to the member now holding its instance id;
* subscriptions changed: the result is still installed; the group epoch is ahead of it, so a new
  run is due on a later heartbeat.

A large result is installed in chunks (``common.offload.chunks``), one write event each; the
target metadata record (the new epoch and the finish time) comes with the last chunk. Until
then members reconcile towards the previous epoch (a member at that epoch does not move), and a
partition is only ever given once its previous owner has released it, so a half-installed
target never doubles an owner. The run stays in flight until its last chunk.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from coordinator.groups.common.assignor_job import (
    JobResult,
    PreparedJob,
    TopicIndexAssignment,
    to_assignment,
)
from coordinator.groups.common.offload import (
    AssignorRun,
    Offloader,
    install_result,
    start_run_effect,
)
from coordinator.runtime import Result
from coordinator.runtime.result import Record

from . import records
from .model import Assignment, ConsumerGroup


def start_effect(shard: Any, group_id: str, prepared: PreparedJob, offloader: Offloader
                 ) -> Callable[[], None]:
    """The effect that starts the group's offloaded run (``common.offload``)."""
    return start_run_effect(shard, group_id, ConsumerGroup, prepared, offloader, install)


def install(shard: Any, now_ms: int, run: AssignorRun, outcome: JobResult | BaseException,
            part: tuple[int, int] | None = None) -> Result:
    """The write event for (a chunk of) a finished run (``common.offload.install_result``)."""
    return install_result(shard, now_ms, run, outcome, part, _target_records,
                          records.target_metadata)


def _target_records(group: ConsumerGroup, run: AssignorRun,
                    changed: Sequence[tuple[str, TopicIndexAssignment]]) -> list[Record]:
    job, topic_ids = run.prepared.job, run.prepared.topic_ids
    instances = dict(zip(job.member_ids, job.instance_ids, strict=True))
    in_result = set(job.member_ids)
    new: dict[str, Assignment] = {}
    for member_id, pairs in changed:
        assignment = to_assignment(pairs, topic_ids)
        if member_id in group.members:
            new[member_id] = assignment
            continue
        replacement = group.static_member(instances.get(member_id))
        if replacement is not None and replacement.member_id not in in_result:
            new[replacement.member_id] = assignment  # the static member's new instance
        # otherwise the member left meanwhile: its assignment is dropped
    gid = group.group_id
    return [records.target_member(gid, member_id, assignment, group.assignment_forms)
            for member_id, assignment in new.items()
            if member_id not in group.target or group.target[member_id] != assignment]
