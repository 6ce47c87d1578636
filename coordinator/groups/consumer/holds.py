"""Deferred resolution's holds over time (seed 004, Design II): a consumer group member that
leaves or is fenced leaves its target's partitions held (a ``ConsumerGroupHeldPartitions``
record, ``imbalance``) when the group's ``consumer.scheduled.rebalance.max.delay.ms`` is above
0; the group's *release timer* fires at the earliest deadline, drops the holds that ended and
bumps the group epoch, so the next target spreads them (``offload.arm_after_bump`` starts it).
The timer is in memory: a load re-arms it from the records (``rearm_on_load``), and a hold
whose deadline passed while the coordinator was down is released at once."""

from __future__ import annotations

from typing import Any

from coordinator.groups.modern import hold_timers
from coordinator.groups.modern import members as member_rules
from coordinator.groups.modern.deferred import new_hold
from coordinator.groups.modern.settings import ImbalancePolicy
from coordinator.observability.logs import get_logger
from coordinator.runtime import Result
from coordinator.runtime.result import Record

from .env import ConsumerGroupEnv, installed
from .imbalance import held_record, held_tombstone, items_of
from .model import ConsumerGroup, ConsumerGroupMember
from .offload import bump_epoch
from .settings import group_settings

log = get_logger("coordinator.groups.consumer")


def release_key(group_id: str) -> tuple[str, str]:
    return ("consumer-held", group_id)


def hold_removed(shard: Any, env: ConsumerGroupEnv, group: ConsumerGroup,
                 member: ConsumerGroupMember, now_ms: int, reason: str) -> list[Record]:
    """The record holding ``member``'s target partitions as it is removed (none when the
    group's delay is 0 or its target is empty), with the release timer armed."""
    delay = ImbalancePolicy.of(group_settings(shard, env, group.group_id)).delay_ms
    hold = new_hold(member.member_id, items_of(group.target_of(member.member_id)), now_ms,
                    delay, reason, group.held.get(member.member_id))
    if hold is None:
        return []
    log.info("holding the partitions of a member that went", group_id=group.group_id,
             member_id=member.member_id, reason=reason, partitions=len(hold.items),
             deadline_ms=hold.deadline_ms)
    arm_release(shard, env, group.group_id, hold.deadline_ms)
    return [held_record(group.group_id, hold)]


def arm_release(shard: Any, env: ConsumerGroupEnv, group_id: str, at_ms: int) -> None:
    """The group's release timer at ``at_ms``, unless it fires earlier already."""
    hold_timers.arm(shard, release_key(group_id), at_ms,
                    lambda shard, now: release_due(shard, now, env, group_id))


def release_due(shard: Any, now_ms: int, env: ConsumerGroupEnv, group_id: str) -> Result:
    """The release timer: the holds that ended are tombstoned and, if the group has members,
    its epoch bumped (the next target spreads their partitions); the timer is armed again for
    the next deadline."""
    group = shard.groups.get(group_id)
    if not isinstance(group, ConsumerGroup):
        return Result()
    ended, left = hold_timers.ended(group.held, now_ms)
    if left is not None:
        arm_release(shard, env, group_id, left)
    if not ended:
        return Result()
    out: list[Record] = [held_tombstone(group_id, h.member_id) for h in ended]
    log.info("released held partitions: their delay ended", group_id=group_id,
             members=[h.member_id for h in ended],
             partitions=sum(len(h.items) for h in ended))
    if group.members:
        out.append(bump_epoch(shard, env, group, now_ms, "held partitions released"))
    return Result(out)


def rearm_on_load(shard: Any, now_ms: int) -> None:
    """After a load: each group's release timer from its holds' deadlines (at once for those
    that passed)."""
    env = installed()
    hold_timers.rearm_on_load(member_rules.groups_of(shard, ConsumerGroup), now_ms,
                              lambda group_id, at: arm_release(shard, env, group_id, at))
