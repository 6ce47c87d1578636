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

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

from coordinator.groups.common.assignor_job import (
    JobResult,
    PreparedJob,
    TopicIndexAssignment,
    build_job,
    to_assignment,
)
from coordinator.groups.common.offload import (
    AssignorRun,
    Offloader,
    chunks,
    install_result,
    start_run_effect,
)
from coordinator.groups.modern.settings import ImbalancePolicy
from coordinator.groups.modern.subscription import next_group_epoch
from coordinator.groups.modern.target import assignment_due, offloaded
from coordinator.observability import sensors
from coordinator.observability.logs import get_logger
from coordinator.runtime import Result
from coordinator.runtime.result import Record

from . import client_selection, pacing, records
from . import regex as consumer_regex
from .env import ConsumerGroupEnv, installed
from .lag_inputs import LAG_ASSIGNOR, topic_offsets
from .model import Assignment, ConsumerGroup, ConsumerGroupMember, SubscribedTopic
from .settings import group_settings
from .target import TargetResult, build_target

log = get_logger("coordinator.groups.consumer")

FAILED_RUN_RETRY_MS = 1000
"""The least wait before a failed run is tried again."""


def start_effect(shard: Any, group_id: str, prepared: PreparedJob, offloader: Offloader,
                 now_ms: int, env: Any = None) -> Callable[[], None]:
    """The effect that starts the group's offloaded run (``common.offload``), noting when it
    started (``pacing``'s estimate of the next one)."""
    def installer(shard: Any, now: int, run: AssignorRun, outcome: JobResult | BaseException,
                  part: tuple[int, int] | None) -> Result:
        return install(shard, now, run, outcome, part, env)

    start = start_run_effect(shard, group_id, ConsumerGroup, prepared, offloader, installer)

    def effect() -> None:
        group = shard.groups.get(group_id)
        before = group.assignor_run if isinstance(group, ConsumerGroup) else None
        start()
        if isinstance(group, ConsumerGroup) and group.assignor_run not in (None, before):
            group.run_started_ms = now_ms

    return effect


def install(shard: Any, now_ms: int, run: AssignorRun, outcome: JobResult | BaseException,
            part: tuple[int, int] | None = None, env: Any = None) -> Result:
    """The write event for (a chunk of) a finished run (``common.offload.install_result``).
    With the last chunk, the group notes how long the run took and, if it changed meanwhile
    (or the run failed), arms its assign timer for the next run (``pacing``)."""
    group = shard.groups.get(run.prepared.job.group_id)
    result = install_result(shard, now_ms, run, outcome, part, _target_records,
                            records.target_metadata)
    last = part is None or part[1] == chunks(outcome)[-1][1]
    if last and group is run.group and isinstance(group, ConsumerGroup):
        pacing.note_run(group, max(0, now_ms - group.run_started_ms))
        failed = isinstance(outcome, BaseException)
        if failed or group.group_epoch > run.prepared.job.group_epoch:
            env = env or installed()
            interval = group_settings(shard, env, group.group_id).assignment_interval_ms
            arm_assign_timer(shard, env, group.group_id,
                             now_ms + (max(interval, FAILED_RUN_RETRY_MS) if failed else interval))
    return result


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


def start_run(shard: Any, env: ConsumerGroupEnv, group: ConsumerGroup, group_epoch: int,
               members: Mapping[str, ConsumerGroupMember], targets: Mapping[str, Assignment],
               metadata: Mapping[str, SubscribedTopic], now_ms: int, offload: bool
               ) -> tuple[list[Record], Any, TargetResult | None]:
    """A new target at ``group_epoch`` for ``members`` (as the assignor sees them, regex
    topics included): (records, effect, result). Offloaded: no records, the effect that starts
    the run, no result; inline: the target records and the result."""
    settings = env.settings
    gid = group.group_id
    if settings.client_assignors:  # a member's client-side assignor computes it (seed 003)
        client = client_selection.start(shard, group, group_epoch, members)
        if client is not None:
            return [], client, None
    policy = ImbalancePolicy.of(group_settings(shard, env, gid))
    offload = offload and not (policy.on or group.held)  # inline: see ``imbalance``
    assignor_name = _preferred_assignor(members.values(), settings.default_assignor)
    offsets = (topic_offsets(shard, gid, metadata, env.log_offsets)
               if assignor_name == LAG_ASSIGNOR else None)
    if offload:
        prepared = build_job(gid, group_epoch, assignor_name, members, targets, metadata,
                             offsets, settings.lag_options, group.job_targets,
                             env.partition_racks)
        log.info("offloaded target assignment", group_id=gid, group_epoch=group_epoch,
                 assignor=assignor_name, members=len(members))
        return [], start_effect(shard, gid, prepared, env.offloader, now_ms, env), None
    result = build_target(group, group_epoch, members, targets, metadata,
                          env.assignor(assignor_name), now_ms, offsets,
                          dict(settings.lag_options), policy, env.partition_racks)
    log.info("computed target assignment", group_id=gid, assignment_epoch=result.epoch,
             assignor=assignor_name, members=len(members), assign_ms=round(result.assign_ms, 2))
    if result.next_round:  # incremental resolution: the next round, once the interval passed
        def next_round() -> None:
            current = shard.groups.get(gid)
            if isinstance(current, ConsumerGroup):
                arm_after_bump(shard, env, current, now_ms)

        return result.records, next_round, result
    return result.records, None, result


def arm_assign_timer(shard: Any, env: ConsumerGroupEnv, group_id: str, at_ms: int) -> int:
    """Arm the group's assign timer (``pacing``); returns when it fires."""
    return pacing.arm(shard, group_id, at_ms,
                      lambda shard, now: assign_timer_fired(shard, now, env, group_id))


def reschedule_assign_timer(shard: Any, env: ConsumerGroupEnv, group_id: str,
                            at_ms: int) -> None:
    """Move the group's assign timer (armed or not) to ``at_ms``."""
    shard.timers.cancel(pacing.assign_timer_key(group_id))
    arm_assign_timer(shard, env, group_id, at_ms)


def arm_assign_timer_by(shard: Any, env: ConsumerGroupEnv, group_id: str, at_ms: int) -> None:
    """Have the group's assign timer fire at ``at_ms`` at the latest."""
    armed = shard.timers.deadline(pacing.assign_timer_key(group_id))
    if armed is None or armed > at_ms:
        reschedule_assign_timer(shard, env, group_id, at_ms)


def assign_timer_fired(shard: Any, now_ms: int, env: ConsumerGroupEnv, group_id: str) -> Result:
    """The assign timer: start the run the group's target waits for, if it still does and
    may (no run in flight, the assignment interval passed: else the timer is armed again)."""
    group = shard.groups.get(group_id)
    if isinstance(group, ConsumerGroup) and group.client_computation is not None:
        verdict = client_selection.check(group, now_ms)  # seed 003: its member left, or late
        if not verdict.fall_back:
            if verdict.wait_until is not None:
                arm_assign_timer(shard, env, group_id, verdict.wait_until)
            return Result()
    if (not isinstance(group, ConsumerGroup) or not group.members
            or group.assignor_run is not None or group.group_epoch <= group.assignment_epoch):
        return Result()
    own = group_settings(shard, env, group_id)
    if not assignment_due(group, group.group_epoch, now_ms, own.assignment_interval_ms):
        arm_assign_timer(shard, env, group_id,
                         pacing.next_run_at(group, now_ms, own.assignment_interval_ms))
        return Result()
    members: Mapping[str, ConsumerGroupMember] = group.members  # read, not kept
    if group.subscribed_regex_counts:  # as the assignor sees them: regex topics included
        resolution = consumer_regex.resolved_topics(group)
        members = {mid: consumer_regex.with_regex_topics(m, resolution)
                   for mid, m in group.members.items()}
    offload = offloaded(own, env)
    out, effect, _ = start_run(shard, env, group, group.group_epoch, members,
                                dict(group.target), group.subscription_metadata, now_ms,
                                offload)
    return Result(out, effect=effect)


def arm_after_bump(shard: Any, env: ConsumerGroupEnv, group: ConsumerGroup,
                   now_ms: int) -> None:
    """After an event that bumps the group epoch outside a heartbeat (a member removed, a
    topic change, a regex resolved): the run it makes due starts as soon as it may."""
    own = group_settings(shard, env, group.group_id)
    arm_assign_timer(shard, env, group.group_id,
                     pacing.next_run_at(group, now_ms, own.assignment_interval_ms))


def bump_epoch(shard: Any, env: ConsumerGroupEnv, group: ConsumerGroup, now_ms: int,
               reason: str) -> Record:
    """The record bumping the group epoch outside a heartbeat (why: ``reason``), the run it
    makes due armed (``arm_after_bump``)."""
    epoch = next_group_epoch(group)
    log.info("bumped group epoch", group_id=group.group_id, group_epoch=epoch, reason=reason)
    sensors.record_rebalance(group.group_id)
    arm_after_bump(shard, env, group, now_ms)
    return records.group_epoch(group.group_id, epoch)


def _preferred_assignor(members: Iterable[ConsumerGroupMember], default: str) -> str:
    counts = Counter(m.server_assignor for m in members if m.server_assignor)
    if not counts:
        return default
    return max(sorted(counts), key=lambda name: counts[name])
