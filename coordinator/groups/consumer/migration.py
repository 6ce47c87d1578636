"""Mixed groups and online migration (KIP-848, issue 5 item 7; Kafka's GroupMetadataManager).

``group.consumer.migration.policy`` decides whether a classic group using the consumer embedded
protocol is upgraded to a consumer group when a consumer protocol member joins it, and whether
a consumer group whose remaining members all use the classic protocol is downgraded back.

Inside a consumer group, classic members keep using JoinGroup/SyncGroup/Heartbeat/LeaveGroup:

* JoinGroup is that member's heartbeat: subscription and owned partitions come from its
  ConsumerProtocolSubscription; the answer's generation is its member epoch;
* SyncGroup returns its reconciled assignment as ConsumerProtocolAssignment bytes;
* Heartbeat answers REBALANCE_IN_PROGRESS when it must rejoin: its epoch is behind the target
  assignment epoch (seed 000), it has partitions to revoke, or partitions it waited for are free.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Sequence
from types import SimpleNamespace
from typing import Any, cast

from coordinator.groups.classic.consumer_protocol import (
    decode_assignment,
    decode_subscription,
)
from coordinator.groups.classic.join import (
    JoinOutcome,
    SyncOutcome,
    join_key,
    sync_key,
)
from coordinator.groups.classic.model import (
    CONSUMER_PROTOCOL_TYPE,
    ClassicGroup,
)
from coordinator.observability.logs import get_logger
from coordinator.runtime import CoordinatorError
from coordinator.runtime.result import Record
from protocol import ErrorCode

from . import records
from .assignment_forms import assignment_of
from .env import ConsumerGroupEnv, installed
from .membership import schedule_session_timeout
from .model import (
    ClassicMemberInfo,
    ConsumerGroup,
    ConsumerGroupMember,
    interned_topic_names,
)
from .subscription import subscription_metadata

log = get_logger("coordinator.groups.migration")


def env() -> ConsumerGroupEnv:
    """The consumer group environment classic handlers use (the app installs it)."""
    return installed()


def _not_found(message: str) -> CoordinatorError:
    return CoordinatorError(ErrorCode.group_id_not_found, message)


def _ids(env: ConsumerGroupEnv, pairs: Iterable[tuple[str, Iterable[int]]]
         ) -> dict[uuid.UUID, frozenset[int]]:
    """(topic name, partitions) pairs as an assignment by topic id (unknown topics dropped)."""
    out = []
    for name, partitions in pairs:
        topic = env.topics.topic(name)
        if topic is not None:
            out.append((topic.topic_id, [p for p in partitions if 0 <= p < topic.partitions]))
    return assignment_of(out)


def _materialise(shard: Any, group_id: str, written: Sequence[Record]) -> ConsumerGroup:
    """The consumer group ``written`` makes, replayed with ``shard``'s replayers on a scratch
    shard (handlers are pure)."""
    scratch = SimpleNamespace(groups={})
    for key, value in written:
        shard.replayers[type(key)](scratch, -1, key, value)
    group = scratch.groups.get(group_id)
    return group if isinstance(group, ConsumerGroup) else ConsumerGroup(group_id)


# ------------------------------------------------------------------------------ upgrade
def upgrade(shard: Any, env: ConsumerGroupEnv, existing: Any, now_ms: int
            ) -> tuple[ConsumerGroup, list[Record], list[tuple[Any, Any]]]:
    """A consumer protocol member joins the classic group ``existing``: (the consumer group it
    becomes, the records converting it, answers for the classic members' waiting requests).
    An empty classic group is simply replaced; GROUP_ID_NOT_FOUND when it cannot be upgraded."""
    if not isinstance(existing, ClassicGroup):
        raise _not_found(f"Group {getattr(existing, 'group_id', '')} is not a consumer group.")
    gid = existing.group_id
    if not existing.members:
        log.info("empty classic group replaced by a consumer group", group_id=gid)
        return ConsumerGroup(gid), [existing.tombstone()], []
    if not env.settings.upgrade_enabled:
        raise _not_found(f"Cannot upgrade classic group {gid} to consumer group because the "
                         "online upgrade is disabled.")
    if existing.protocol_type != CONSUMER_PROTOCOL_TYPE:
        raise _not_found(f"Cannot upgrade classic group {gid} to consumer group because the "
                         "group does not use the consumer embedded protocol.")
    if len(existing.members) >= env.settings.max_size:
        raise _not_found(f"Cannot upgrade classic group {gid} to consumer group because the "
                         "group size exceeds the consumer group maximum size.")
    epoch = existing.generation_id
    members: list[ConsumerGroupMember] = []
    claimed: set[tuple[uuid.UUID, int]] = set()
    owned_by: dict[str, dict[uuid.UUID, frozenset[int]]] = {}
    subs = {}
    for m in existing.members.values():
        sub = decode_subscription(m.metadata(existing.protocol_name or "")
                                  or (m.protocols[0][1] if m.protocols else b""))
        assigned = decode_assignment(m.assignment)
        if sub is None or assigned is None:
            raise _not_found(f"Cannot upgrade classic group {gid} to consumer group because "
                             f"member {m.member_id} has an invalid consumer protocol.")
        subs[m.member_id] = sub
        owned_by[m.member_id] = _ids(env, assigned)
        claimed |= {(t, p) for t, ps in owned_by[m.member_id].items() for p in ps}
    for m in existing.members.values():
        # Cooperative members keep partitions across rebalances and report them in their
        # subscription: count those as theirs too unless another member was assigned them.
        extra = _ids(env, subs[m.member_id].owned)
        mine = dict(owned_by[m.member_id])
        for topic_id, partitions in extra.items():
            free = frozenset(p for p in partitions if (topic_id, p) not in claimed)
            if free:
                mine[topic_id] = mine.get(topic_id, frozenset()) | free
                claimed |= {(topic_id, p) for p in free}
        sub = subs[m.member_id]
        members.append(ConsumerGroupMember(
            m.member_id, member_epoch=epoch, previous_member_epoch=epoch,
            instance_id=m.group_instance_id, rack_id=sub.rack_id or None,
            rebalance_timeout_ms=m.rebalance_timeout_ms, client_id=m.client_id,
            client_host=m.client_host, subscribed_topic_names=interned_topic_names(sub.topics),
            assigned_partitions=mine,
            classic=ClassicMemberInfo(m.session_timeout_ms, m.protocols)))
    out: list[Record] = [existing.tombstone()]
    names: set[str] = set()
    for member in members:
        out += [records.member_metadata(gid, member),
                records.target_member(gid, member.member_id, member.assigned_partitions),
                records.current_assignment(gid, member)]
        names |= set(member.subscribed_topic_names)
    out += [records.subscription_metadata(
                gid, subscription_metadata(sorted(names), env).values()),
            records.group_epoch(gid, epoch),
            records.target_metadata(gid, epoch, now_ms)]
    completions: list[tuple[Any, Any]] = []
    for m in existing.members.values():
        if m.awaiting_join:
            completions.append((join_key(gid, m.member_id),
                                JoinOutcome(ErrorCode.rebalance_in_progress, m.member_id)))
        if m.awaiting_sync:
            completions.append((sync_key(gid, m.member_id),
                                SyncOutcome(ErrorCode.rebalance_in_progress)))
    for member in members:
        # every member was built above with its ClassicMemberInfo
        classic = cast(ClassicMemberInfo, member.classic)
        schedule_session_timeout(shard, env, gid, member.member_id, now_ms,
                                          classic.session_timeout_ms)
    log.info("classic group upgraded to a consumer group", group_id=gid, group_epoch=epoch,
             members=len(members))
    return _materialise(shard, gid, out), out, completions


# ------------------------------------------------------------------------------ removal, downgrade


# ------------------------------------------------------------------------------ classic members


