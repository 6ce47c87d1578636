"""Members leaving a consumer group: their session and rebalance timeouts, fencing, removal,
and the downgrade to a classic group a removal may bring (``group.consumer.migration.policy``:
when only classic protocol members remain)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from coordinator.groups.classic.consumer_protocol import decode_subscription, encode_assignment
from coordinator.groups.classic.join import _arm_session, _prepare_rebalance, _Step
from coordinator.groups.classic.model import (
    CONSUMER_PROTOCOL_TYPE,
    ClassicGroup,
    ClassicGroupState,
    ClassicMember,
)
from coordinator.groups.modern import members as member_rules
from coordinator.groups.modern.subscription import next_group_epoch
from coordinator.observability import sensors, timeline
from coordinator.observability.logs import get_logger
from coordinator.runtime import Result
from coordinator.runtime.result import Record

from . import client_selection, records
from . import regex as consumer_regex
from .env import ConsumerGroupEnv, installed
from .holds import hold_removed
from .model import Assignment, ConsumerGroup, ConsumerGroupMember, MemberState
from .offload import arm_after_bump
from .settings import group_settings
from .subscription import names_after, subscription_after, subscription_metadata

log = get_logger("coordinator.groups.consumer")
migration_log = get_logger("coordinator.groups.migration")


def session_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return member_rules.session_key("consumer", group_id, member_id)


def rebalance_key(group_id: str, member_id: str) -> tuple[str, str, str]:
    return member_rules.rebalance_key("consumer", group_id, member_id)


def schedule_session_timeout(shard: Any, env: ConsumerGroupEnv, group_id: str, member_id: str,
                             now_ms: int, timeout_ms: int | None = None) -> None:
    """``timeout_ms``: a classic member's own session timeout (mixed groups)."""
    def remove(shard: Any, group: ConsumerGroup, member: ConsumerGroupMember,
               now: int) -> Result:
        return remove_members(shard, env, group, [member], now,
                              reason=timeline.SESSION_EXPIRED)

    timeout = timeout_ms if timeout_ms is not None else \
        group_settings(shard, env, group_id).session_timeout_ms
    member_rules.schedule_session_timeout(shard, "consumer", ConsumerGroup, group_id, member_id,
                                          now_ms + timeout, remove)


def schedule_rebalance_timeout(shard: Any, env: ConsumerGroupEnv, group_id: str,
                               member: ConsumerGroupMember, now_ms: int) -> None:
    epoch = member.member_epoch

    def remove(shard: Any, group: ConsumerGroup, current: ConsumerGroupMember,
               now: int) -> Result:
        return remove_members(shard, env, group, [current], now,
                              reason=timeline.REBALANCE_TIMEOUT)

    timeout = member.rebalance_timeout_ms if member.rebalance_timeout_ms > 0 else \
        group_settings(shard, env, group_id).session_timeout_ms
    member_rules.schedule_expiry(
        shard, rebalance_key(group_id, member.member_id), now_ms + timeout, ConsumerGroup,
        group_id, member.member_id, timeline.REBALANCE_TIMEOUT,
        "consumer group member did not revoke within its rebalance timeout", remove,
        lambda current: current.member_epoch == epoch
        and current.state is MemberState.UNREVOKED_PARTITIONS)


def cancel_timers(shard: Any, group_id: str, member_id: str) -> None:
    member_rules.cancel_timers(shard, "consumer", group_id, member_id)


def rearm_on_load(shard: Any, now_ms: int) -> None:
    env = installed()

    def rearm(group: ConsumerGroup, member: ConsumerGroupMember) -> None:
        schedule_session_timeout(shard, env, group.group_id, member.member_id, now_ms,
                                 _classic_session_ms(member))
        if member.state is MemberState.UNREVOKED_PARTITIONS:
            schedule_rebalance_timeout(shard, env, group.group_id, member, now_ms)

    for group in member_rules.groups_of(shard, ConsumerGroup):  # a group's timers, then its run
        for member in group.members.values():
            rearm(group, member)
        if group.members and group.group_epoch > group.assignment_epoch:
            arm_after_bump(shard, env, group, now_ms)


def _classic_session_ms(member: ConsumerGroupMember) -> int | None:
    return None if member.classic is None else member.classic.session_timeout_ms


def fence_member(shard: Any, env: ConsumerGroupEnv, group: ConsumerGroup,
                 member: ConsumerGroupMember) -> list[Record]:
    """Records removing ``member`` from ``group`` and bumping the group epoch."""
    gid = group.group_id
    out: list[Record] = [
        records.current_assignment_tombstone(gid, member.member_id),
        records.target_member_tombstone(gid, member.member_id),
        records.member_metadata_tombstone(gid, member.member_id),
        *client_selection.tombstones(group, member.member_id),
    ]
    still = consumer_regex.regex_counts_after(group, [member], [])
    out += [records.regex_tombstone(gid, regex) for regex in group.resolved_regexes
            if regex not in still]
    metadata = subscription_after(group, [member], [], env)
    if metadata != group.subscription_metadata:
        out.append(records.subscription_metadata(gid, metadata.values()))
    epoch = next_group_epoch(group)
    out.append(records.group_epoch(gid, epoch))
    log.info("bumped group epoch", group_id=gid, group_epoch=epoch, reason="member removed",
             member_id=member.member_id)
    sensors.record_rebalance(gid)
    cancel_timers(shard, gid, member.member_id)
    return out


def _names(env: ConsumerGroupEnv, assignment: Assignment) -> list[tuple[str, list[int]]]:
    out = []
    for topic_id, partitions in assignment.items():
        topic = env.topics.topic_by_id(topic_id)
        if topic is not None:
            out.append((topic.name, sorted(partitions)))
    return out


def remove_members(shard: Any, env: ConsumerGroupEnv, group: ConsumerGroup,
                   members: Sequence[ConsumerGroupMember], now_ms: int,
                   response: Any = None, reason: str = timeline.LEFT) -> Result:
    """Records removing ``members`` (one group epoch bump); then the downgrade, if due. Their
    partitions are held first under deferred resolution (``holds``; ``reason``: why they
    go)."""
    gid = group.group_id
    gone = {m.member_id for m in members}
    remaining = [m for m in group.members.values() if m.member_id not in gone]
    for member in members:
        cancel_timers(shard, gid, member.member_id)
    if remaining and all(m.classic is not None for m in remaining) \
            and any(m.classic is None for m in members) and env.settings.downgrade_enabled \
            and len(remaining) <= shard.classic_config.max_size:
        downgraded = _downgrade(shard, env, group, remaining, now_ms)
        if downgraded is not None:
            written, step = downgraded
            result = step.result(shard, response)
            return Result(written + list(result.records), response, result.completions,
                          result.effect)
    out: list[Record] = []
    for member in members:
        held = hold_removed(shard, env, group, member, now_ms, reason)
        out += fence_member(shard, env, group, member)
        out += held
    if len(members) > 1:
        # Each fence_member saw one removal: the subscriptions after all of them.
        metadata = subscription_metadata(
            names_after(group, members, []), env)
        out.append(records.subscription_metadata(gid, metadata.values()))
    if len(remaining) > 0:
        arm_after_bump(shard, env, group, now_ms)  # the run the bump made due
    return Result(out, response)


def _downgrade(shard: Any, env: ConsumerGroupEnv, group: ConsumerGroup,
               remaining: Sequence[ConsumerGroupMember], now_ms: int
               ) -> tuple[list[Record], _Step] | None:
    """The consumer group becomes a classic group of its classic members, which must rejoin."""
    gid = group.group_id
    generation = next_group_epoch(group)
    classic = ClassicGroup(gid, protocol_type=CONSUMER_PROTOCOL_TYPE, generation_id=generation,
                           state_timestamp_ms=now_ms)
    for m in remaining:
        info = m.classic
        assert info is not None
        version = 0
        sub = decode_subscription(info.protocols[0][1]) if info.protocols else None
        if sub is not None:
            version = sub.version
        classic.members[m.member_id] = ClassicMember(
            member_id=m.member_id, group_instance_id=m.instance_id, client_id=m.client_id,
            client_host=m.client_host,
            rebalance_timeout_ms=m.rebalance_timeout_ms if m.rebalance_timeout_ms > 0
            else info.session_timeout_ms,
            session_timeout_ms=info.session_timeout_ms, protocol_type=CONSUMER_PROTOCOL_TYPE,
            protocols=info.protocols,
            assignment=encode_assignment(_names(env, m.assigned_partitions), version))
    if not classic._candidates():
        migration_log.info("cannot downgrade: the classic members share no protocol", group_id=gid)
        return None
    classic.protocol_name = classic.select_protocol()
    classic.leader_id = next(iter(classic.members))
    classic.state = ClassicGroupState.STABLE
    out: list[Record] = records.group_tombstones(group)
    out.append(classic.record())
    step = _Step(classic.copy())
    for m in remaining:
        cancel_timers(shard, gid, m.member_id)
        _arm_session(step, step.group.members[m.member_id], now_ms)
    _prepare_rebalance(step, now_ms, "the group was downgraded to a classic group")
    migration_log.info("consumer group downgraded to a classic group", group_id=gid,
             generation=generation, members=len(remaining))
    return out, step
