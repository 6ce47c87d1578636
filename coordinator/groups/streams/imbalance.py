"""Deferred and incremental resolution of imbalance (seed 004, Designs II and III) for streams
groups' active tasks. With ``streams.scheduled.rebalance.max.delay.ms`` above 0, the active
tasks of a member that leaves or is fenced are held (``StreamsGroupHeldTasks`` records, type
1021) until the delay ends; a member that joins meanwhile takes them first, and nobody else's
active tasks move while any are held. The group's release timer drops the holds that ended and
bumps the group epoch, so the next target spreads them; it is in memory and re-armed from the
records on load. With ``streams.assignment.max.moves`` a target moves at most that many active
tasks away from members that have them; the rest follow in later rounds. A group with either
on computes its targets inline (the policies need the whole target and the holds)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from coordinator.groups.modern import hold_timers
from coordinator.groups.modern import members as member_rules
from coordinator.groups.modern import replay as modern_replay
from coordinator.groups.modern.deferred import Hold, changed_holds, kept_items, new_hold, resolve
from coordinator.groups.modern.incremental import limit_moves
from coordinator.groups.modern.settings import ImbalancePolicy
from coordinator.observability import timeline
from coordinator.observability.logs import get_logger
from coordinator.runtime import Result
from coordinator.runtime.result import Record
from storage.records import StreamsGroupHeldTasksKey, StreamsGroupHeldTasksValue

from . import records
from .env import StreamsGroupEnv, group_settings, installed
from .model import StreamsGroup, StreamsGroupMember, TasksTuple, iter_tasks, minus, tasks_of

log = get_logger("coordinator.groups.streams")


def policy(shard: Any, env: StreamsGroupEnv, group: StreamsGroup) -> ImbalancePolicy | None:
    """The group's policy if its targets go through it (then computed inline), else None."""
    own = ImbalancePolicy.of(group_settings(shard, env, group.group_id))
    return own if own.on or group.held else None


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
    delay = ImbalancePolicy.of(group_settings(shard, env, group.group_id)).delay_ms
    hold = new_hold(member.member_id, iter_tasks(group.target_of(member.member_id).active),
                    now_ms, delay, reason, group.held.get(member.member_id))
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
def apply(group: StreamsGroup, group_epoch: int, proposal: Mapping[str, TasksTuple],
          policy: ImbalancePolicy, now_ms: int
          ) -> tuple[dict[str, TasksTuple], list[Record], bool]:
    """The target at ``group_epoch`` of the members in ``proposal`` (the task assignor's answer
    for every member) under ``policy``, over active tasks: deferred resolution
    (``modern.deferred.resolve``), then at most ``policy.max_moves`` moves
    (``modern.incremental.limit_moves``); a task that stays with (or goes to) a member is none
    of its standby or warm-up tasks. Also the records of the holds that changed, and whether
    another round must follow (moves left for later, or joining members just took every held
    task: the others rebalance next)."""
    gid = group.group_id
    previous = {m: frozenset(iter_tasks(group.target_of(m).active)) for m in proposal}
    wanted = {m: frozenset(iter_tasks(t.active)) for m, t in proposal.items()}
    tasks = set().union(*wanted.values(), *(h.items for h in group.held.values()))

    def exists(member_id: str, task: Any) -> bool:
        return task in tasks

    deferred = resolve(previous, wanted, list(group.held.values()) if policy.delay_ms else [],
                       now_ms, exists)
    limited = limit_moves(kept_items(previous, proposal, exists), deferred.assignment,
                          policy.max_moves)
    gone, changed = changed_holds(group.held, deferred.holds)
    out: list[Record] = [held_tombstone(gid, m) for m in gone]
    out += [held_record(gid, h) for h in changed]
    targets: dict[str, TasksTuple] = {}
    for member_id, proposed in proposal.items():
        mine = limited.assignment[member_id]
        if mine == wanted[member_id]:
            targets[member_id] = proposed
            continue
        active = tasks_of(mine)
        targets[member_id] = TasksTuple(active, minus(proposed.standby, active),
                                        minus(proposed.warmup, active))
    if policy.max_moves > 0 and (limited.moved or limited.deferred):
        timeline.note_round(gid, group_epoch, limited.moved, limited.deferred, now_ms)
    settling = bool(group.held) and not deferred.holding and deferred.assignment != wanted
    return targets, out, limited.deferred > 0 or settling
