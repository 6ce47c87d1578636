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

from collections.abc import Callable
from typing import Any

from coordinator.runtime import Result

from .env import ConsumerGroupEnv
from .heartbeat import HeartbeatRequest, HeartbeatResponse
from .membership import schedule_session_timeout, session_key
from .model import ConsumerGroup, ConsumerGroupMember, MemberState
from .settings import GroupSettings, group_settings
from .target import subscribed_ids

_NO_CONFIGS: Any = object()
"""What ``SteadyHeartbeats`` takes for a group without configs of its own (not None: a kept
None would compare equal to a first look)."""


def is_steady_request(request: HeartbeatRequest) -> bool:
    """The request carries nothing but the member's identity and epoch."""
    return (request.member_epoch > 0 and request.instance_id is None
            and request.rack_id is None and request.rebalance_timeout_ms == -1
            and request.subscribed_topic_names is None
            and request.subscribed_topic_regex is None and request.server_assignor is None
            and request.owned is None and request.classic is None
            and request.client_assignors is None)


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
    if type(group) is not ConsumerGroup or not _group_steady(group, request.member_epoch):
        return None
    member = group.members.get(request.member_id)
    if member is None or not _member_steady(group, member, request):
        return None
    interval = _keep_session(shard, env, group_settings(shard, env, group.group_id),
                             group.group_id, member.member_id,
                             session_key(group.group_id, member.member_id), now_ms)
    return HeartbeatResponse(member.member_id, request.member_epoch, interval)


class SteadyHeartbeats:
    """``steady_response`` of one steady request, asked again and again (a member's every
    heartbeat, from a connection's shortcut), as cheaply as it can be: its checks of the
    member are skipped while the group holds the very member object they passed on, with the
    same subscription metadata (members are frozen and replaced when they change; the
    metadata is replaced, never changed in place), and the group's effective settings are
    kept while its configs and the broker's are the same objects (they too are replaced when
    they change); the group's checks are made every time.

    ``again(now_ms)`` is the answer's body (``body_for(interval)`` of the group's heartbeat
    interval, made again only when the interval changes; the member's session timer moved),
    or None with nothing changed: it runs on the shard ``ready(index, group_id)`` gives (the
    runtime's ``ready_shard``: None when the event would not run at once)."""

    __slots__ = ("_base", "_body", "_body_for", "_env", "_group_id", "_index", "_interval",
                 "_legacy", "_member", "_member_id", "_metadata", "_ready", "_request",
                 "_session", "_settings", "_stored")

    def __init__(self, env: ConsumerGroupEnv, request: HeartbeatRequest,
                 ready: Callable[[int, str], Any], index: int,
                 body_for: Callable[[int], Any]) -> None:
        self._env = env
        self._request = request
        self._group_id = request.group_id
        self._member_id = request.member_id
        self._session = session_key(request.group_id, request.member_id)
        self._member: ConsumerGroupMember | None = None
        self._metadata: Any = None
        self._stored: Any = None
        self._legacy: Any = None
        self._base: Any = None
        self._settings: GroupSettings | None = None
        self._ready = ready
        self._index = index
        self._body_for = body_for
        self._interval: int | None = None
        self._body: Any = None

    def again(self, now_ms: int) -> Any:
        shard = self._ready(self._index, self._group_id)
        if shard is None:
            return None
        group_id = self._group_id
        group = shard.groups.get(group_id)
        epoch = self._request.member_epoch
        if type(group) is not ConsumerGroup or not _group_steady(group, epoch):
            return None
        member = group.members.get(self._member_id)
        if member is not self._member or group.subscription_metadata is not self._metadata:
            if member is None or not _member_steady(group, member, self._request):
                return None
            self._member, self._metadata = member, group.subscription_metadata
        settings = self._settings
        stored = shard.group_configs.get(group_id, _NO_CONFIGS)
        legacy = shard.legacy_group_configs.get(group_id)
        if (settings is None or stored is not self._stored or legacy is not self._legacy
                or self._env.settings is not self._base):
            self._stored, self._legacy, self._base = stored, legacy, self._env.settings
            settings = self._settings = group_settings(shard, self._env, group_id)
        interval = _keep_session(shard, self._env, settings, group_id, self._member_id,
                                 self._session, now_ms)
        if interval != self._interval:
            self._interval, self._body = interval, self._body_for(interval)
        return self._body


def _group_steady(group: ConsumerGroup, epoch: int) -> bool:
    return (group.group_epoch == epoch and group.assignment_epoch == epoch
            and group.assignor_run is None and not group.resolved_regexes
            and not group.subscribed_regex_counts)


def _member_steady(group: ConsumerGroup, member: ConsumerGroupMember,
                   request: HeartbeatRequest) -> bool:
    if (member.member_epoch != request.member_epoch or member.state is not MemberState.STABLE
            or member.classic is not None or member.instance_id is not None
            or member.subscribed_topic_regex or member.client_id != request.client_id
            or member.client_host != request.client_host):
        return False
    assigned = member.assigned_partitions
    # partitions of a topic it no longer subscribes to are to be revoked: not steady
    return not assigned or subscribed_ids(member, group.subscription_metadata).issuperset(
        assigned)


def _keep_session(shard: Any, env: ConsumerGroupEnv, settings: GroupSettings, group_id: str,
                  member_id: str, key: Any, now_ms: int) -> int:
    """Move the member's session deadline as the full handler would (the session timer's
    action is the one it would arm again: only its deadline moves, or it is armed anew if it
    is not there, as after a load), by the group's effective ``settings``; the group's
    heartbeat interval."""
    if not shard.timers.postpone(key, now_ms + settings.session_timeout_ms):
        schedule_session_timeout(shard, env, group_id, member_id, now_ms)
    return settings.heartbeat_interval_ms
