"""Deferred resolution of imbalance (seed 004, Design II) for streams groups: with the group's
``streams.scheduled.rebalance.max.delay.ms`` above 0, the active tasks of a member that leaves
or is fenced are held (``StreamsGroupHeldTasks`` records, type 1021) until the delay ends; a
member that joins meanwhile takes them first (``modern.deferred.resolve`` over the active
tasks; a task it takes is no standby or warm-up of its), and nobody else's active tasks move
while any are held. The group's release timer drops the holds that ended and bumps the group
epoch, so the next target spreads them; it is in memory and re-armed from the records on load.
A group with a delay computes its targets inline (the policy needs the whole target and the
holds)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from coordinator.groups.modern import hold_timers
from coordinator.groups.modern import members as member_rules
from coordinator.groups.modern import replay as modern_replay
from coordinator.groups.modern.deferred import Hold, new_hold, resolve
from coordinator.observability.logs import get_logger
from coordinator.runtime import Result
from coordinator.runtime.result import Record
from storage.records import StreamsGroupHeldTasksKey, StreamsGroupHeldTasksValue

from . import records
from .env import StreamsGroupEnv, group_settings, installed
from .model import StreamsGroup, StreamsGroupMember, TasksTuple, iter_tasks, minus, tasks_of

log = get_logger("coordinator.groups.streams")


def delay_ms(shard: Any, env: StreamsGroupEnv, group_id: str) -> int:
    return int(group_settings(shard, env, group_id).scheduled_rebalance_max_delay_ms or 0)


def on(shard: Any, env: StreamsGroupEnv, group: StreamsGroup) -> bool:
    """Whether the group's targets go through deferred resolution (computed inline)."""
    return bool(group.held) or delay_ms(shard, env, group.group_id) > 0


# ------------------------------------------------------------------------------ records
def held_record(group_id: str, hold: Hold) -> Record:
    return (StreamsGroupHeldTasksKey(group_id=group_id, member_id=hold.member_id),
            StreamsGroupHeldTasksValue(active_tasks=records.task_ids(tasks_of(hold.items)),
                                       deadline_ms=hold.deadline_ms, reason=hold.reason))


def held_tombstone(group_id: str, member_id: str) -> Record:
    return (StreamsGroupHeldTasksKey(group_id=group_id, member_id=member_id), None)


def _replay(group: StreamsGroup, key: StreamsGroupHeldTasksKey,
            value: StreamsGroupHeldTasksValue | None) -> None:
    if value is None:
        group.held.pop(key.member_id, None)
        return
    items = frozenset((t.subtopology_id, p) for t in value.active_tasks for p in t.partitions)
    group.held[key.member_id] = Hold(key.member_id, items, value.deadline_ms, value.reason)


replay = modern_replay.group_record(StreamsGroup, _replay)


# ------------------------------------------------------------------------------ over time
def release_key(group_id: str) -> tuple[str, str]:
    return ("streams-held", group_id)


def hold_removed(shard: Any, group: StreamsGroup, member: StreamsGroupMember, now_ms: int,
                 reason: str) -> list[Record]:
    """The record holding ``member``'s active target tasks as it is removed (none with a delay
    of 0 or no active tasks), the release timer armed."""
    env = installed()
    items = frozenset(iter_tasks(group.target_of(member.member_id).active))
    earlier = group.held.get(member.member_id)
    if earlier is not None:
        items |= earlier.items
    hold = new_hold(member.member_id, items, now_ms, delay_ms(shard, env, group.group_id),
                    reason)
    if hold is None:
        return []
    log.info("holding the active tasks of a member that went", group_id=group.group_id,
             member_id=member.member_id, reason=reason, tasks=len(hold.items),
             deadline_ms=hold.deadline_ms)
    arm_release(shard, group.group_id, hold.deadline_ms)
    return [held_record(group.group_id, hold)]


def arm_release(shard: Any, group_id: str, at_ms: int) -> None:
    hold_timers.arm(shard, release_key(group_id), at_ms,
                    lambda shard, now: release_due(shard, now, group_id))


def release_due(shard: Any, now_ms: int, group_id: str) -> Result:
    """The release timer: the holds that ended are tombstoned and the group epoch bumped (the
    next heartbeat of any member computes the target that spreads them)."""
    group = shard.groups.get(group_id)
    if not isinstance(group, StreamsGroup):
        return Result()
    ended, left = hold_timers.ended(group.held, now_ms)
    if left is not None:
        arm_release(shard, group_id, left)
    if not ended:
        return Result()
    out: list[Record] = [held_tombstone(group_id, h.member_id) for h in ended]
    log.info("released held tasks: their delay ended", group_id=group_id,
             members=[h.member_id for h in ended])
    if group.members:
        epoch = group.group_epoch + 1
        out.append(records.group_metadata(group, epoch, group.metadata_hash,
                                          group.validated_topology_epoch,
                                          group.assignment_configs))
        log.info("bumped group epoch", group_id=group_id, group_epoch=epoch,
                 reason="held tasks released")
    return Result(out)


def rearm_on_load(shard: Any, now_ms: int) -> None:
    hold_timers.rearm_on_load(member_rules.groups_of(shard, StreamsGroup), now_ms,
                              lambda group_id, at: arm_release(shard, group_id, at))


# ------------------------------------------------------------------------------ the target
def apply(group: StreamsGroup, proposal: Mapping[str, TasksTuple], delay: int, now_ms: int
          ) -> tuple[dict[str, TasksTuple], list[Record], bool]:
    """The target of the members in ``proposal`` (the assignor's answer for every member) under
    deferred resolution, the records of the holds that changed, and whether the next target
    must be the assignor's (joining members just took every held task: the others rebalance
    in the next round)."""
    gid = group.group_id
    previous = {m: frozenset(iter_tasks(group.target_of(m).active)) for m in proposal}
    wanted = {m: frozenset(iter_tasks(t.active)) for m, t in proposal.items()}
    holds = list(group.held.values()) if delay > 0 else []
    deferred = resolve(previous, wanted, holds, now_ms, lambda member, task: True)
    out: list[Record] = []
    after = {h.member_id: h for h in deferred.holds}
    for member_id, hold in group.held.items():
        now = after.get(member_id)
        if now is None:
            out.append(held_tombstone(gid, member_id))
        elif now.items != hold.items:
            out.append(held_record(gid, now))
    targets: dict[str, TasksTuple] = {}
    for member_id, tasks in proposal.items():
        active = tasks_of(deferred.assignment[member_id])
        if deferred.assignment[member_id] == wanted[member_id]:
            targets[member_id] = tasks
            continue
        targets[member_id] = TasksTuple(active, minus(tasks.standby, active),
                                        minus(tasks.warmup, active))
    settling = bool(group.held) and not deferred.holding and deferred.assignment != wanted
    return targets, out, settling
