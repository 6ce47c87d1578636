"""The steady heartbeat's fast path: a reconciled member of a settled group heartbeating with
nothing new (what a Java consumer sends between rebalances: its epoch, no subscription, no
owned partitions) changes nothing but its session deadline.

``steady_heartbeat`` answers such a heartbeat with what ``heartbeat.heartbeat`` would answer
(no records, the member's epoch, the group's heartbeat interval, no assignment) and re-arms
the session timeout as it would; for anything else it returns None and the full handler runs.
Every condition below is one under which the full handler writes no record, computes no
target, reconciles nothing and raises nothing; ``tests/unit/test_consumer_steady_heartbeat.py``
checks the two agree.
"""

from __future__ import annotations

from typing import Any

from coordinator.runtime import Result

from .env import ConsumerGroupEnv
from .heartbeat import HeartbeatRequest, HeartbeatResponse
from .membership import schedule_session_timeout, session_key
from .model import ConsumerGroup, MemberState
from .settings import group_settings
from .target import subscribed_ids


def is_steady_request(request: HeartbeatRequest) -> bool:
    """The request carries nothing but the member's identity and epoch."""
    return (request.member_epoch > 0 and request.instance_id is None
            and request.rack_id is None and request.rebalance_timeout_ms == -1
            and request.subscribed_topic_names is None
            and request.subscribed_topic_regex is None and request.server_assignor is None
            and request.owned is None and request.classic is None)


def steady_heartbeat(shard: Any, now_ms: int, env: ConsumerGroupEnv,
                     request: HeartbeatRequest) -> Result | None:
    """The answer to a heartbeat that changes nothing, or None when it might change something
    (then ``heartbeat.heartbeat`` decides)."""
    if not is_steady_request(request):
        return None
    response = steady_response(shard, now_ms, env, request)
    return None if response is None else Result((), response)


def steady_response(shard: Any, now_ms: int, env: ConsumerGroupEnv,
                    request: HeartbeatRequest) -> HeartbeatResponse | None:
    """``steady_heartbeat``'s response for a request ``is_steady_request`` accepted (its
    member's session timer moved), or None, with nothing changed."""
    group = shard.groups.get(request.group_id)
    if type(group) is not ConsumerGroup:
        return None
    member = group.members.get(request.member_id)
    epoch = request.member_epoch
    if (member is None or member.member_epoch != epoch or member.state is not MemberState.STABLE
            or member.classic is not None or member.instance_id is not None
            or group.group_epoch != epoch or group.assignment_epoch != epoch
            or group.assignor_run is not None or group.resolved_regexes
            or group.subscribed_regex_counts or member.subscribed_topic_regex
            or member.client_id != request.client_id
            or member.client_host != request.client_host):
        return None
    assigned = member.assigned_partitions
    if assigned:
        ids = subscribed_ids(member, group.subscription_metadata)
        if not ids.issuperset(assigned):
            return None  # partitions of a topic it no longer subscribes to: to revoke
    gid = group.group_id
    settings = group_settings(shard, env, gid)
    # the session timer's action is the one the full handler would arm again: only its
    # deadline moves (armed anew if it is not there, as after a load)
    if not shard.timers.postpone(session_key(gid, member.member_id),
                                 now_ms + settings.session_timeout_ms):
        schedule_session_timeout(shard, env, gid, member.member_id, now_ms)
    return HeartbeatResponse(member.member_id, epoch, settings.heartbeat_interval_ms)
