"""The classic protocol's requests (JoinGroup, SyncGroup, Heartbeat, LeaveGroup) to whichever
group holds the id: a classic group (``classic``), or a consumer group (KIP-848) whose classic
members use these APIs, a mixed group (``consumer.migration``). An empty streams group is
replaced by the classic group; a non-empty one, or a share group, is
INCONSISTENT_GROUP_PROTOCOL. Kafka's ``GroupMetadataManager``
branches the same way (``classicGroupJoinToConsumerGroup`` and friends).
"""

from __future__ import annotations

from typing import Any

from coordinator.runtime import Result
from protocol import ErrorCode

from .classic import join as classic_join
from .classic import session as classic_session
from .classic.join import JoinOutcome, JoinRequest, SyncRequest
from .classic.model import ClassicGroup
from .classic.session import HeartbeatRequest
from .consumer import migration
from .consumer import mixed as consumer_mixed
from .consumer import records as consumer_records
from .consumer.model import ConsumerGroup
from .streams import records as streams_records
from .streams.model import StreamsGroup


def _consumer_group(shard: Any, group_id: str) -> ConsumerGroup | None:
    group = shard.groups.get(group_id)
    return group if isinstance(group, ConsumerGroup) else None


def join(shard: Any, request: JoinRequest, now: int) -> Result:
    """A classic member joins a consumer group that has members (a mixed group), replaces an
    empty one, or joins a classic group; an id held by a group of another type is
    INCONSISTENT_GROUP_PROTOCOL (after the checks every JoinGroup passes first)."""
    error = classic_join.validate_join(request, shard.classic_config)
    group = shard.groups.get(request.group_id)
    if error is None and group is not None and not isinstance(
            group, ClassicGroup | ConsumerGroup) and not (
            isinstance(group, StreamsGroup) and not group.members):
        error = ErrorCode.inconsistent_group_protocol
    if error is not None:
        return Result((), JoinOutcome(error, request.member_id))
    if isinstance(group, ConsumerGroup):
        if group.members:
            return consumer_mixed.classic_join(shard, migration.env(), group, request, now)
        return classic_join.join(shard, request, now,
                                 replacing=consumer_records.group_tombstones(group))
    if isinstance(group, StreamsGroup) and not group.members:
        # An empty streams group makes way for the classic group, as in Kafka.
        return classic_join.join(shard, request, now,
                                 replacing=streams_records.group_tombstones(group))
    return classic_join.join(shard, request, now)


def sync(shard: Any, request: SyncRequest, now: int) -> Result:
    if request.group_id and (mixed := _consumer_group(shard, request.group_id)) is not None:
        return consumer_mixed.classic_sync(shard, migration.env(), mixed, request, now)
    return classic_session.sync(shard, request, now)


def heartbeat(shard: Any, request: HeartbeatRequest, now: int) -> Result:
    if (mixed := _consumer_group(shard, request.group_id)) is not None:
        return consumer_mixed.classic_heartbeat(shard, migration.env(), mixed, request.member_id,
                                           request.group_instance_id, request.generation_id,
                                           now)
    return classic_session.heartbeat(shard, request, now)


def leave(shard: Any, group_id: str, members: list[tuple[str, str | None, str | None]],
          now: int) -> Result:
    """``members`` are (member id, group instance id, reason); the response is the error of
    each, in order."""
    if (mixed := _consumer_group(shard, group_id)) is not None:
        return consumer_mixed.classic_leave(shard, migration.env(), mixed, members, now)
    return classic_session.leave(shard, group_id, members, now)
