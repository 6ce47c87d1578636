"""When a consumer group's next target assignment run starts, and how soon a member whose
target is pending should heartbeat again (issue 24: rebalances without offload's extra
heartbeat).

Seed 000 starts a run only on a heartbeat that finds one due, so with offload on the heartbeat
that starts it gets no new target and the member waits a whole heartbeat interval for the next.
Here a run starts as soon as it may:

* a change that leaves the group's target behind its epoch (a member leaving or fenced, a topic
  change, a regex resolved, a result installed while the group changed) arms the group's
  *assign timer*: a write event that starts the run once the assignment interval has passed
  since the last target's ``Timestamp`` (at once when it has), inline or offloaded as the
  heartbeat would;
* a new group's first run (offloaded) starts ``first_target_window_ms`` after the last of the
  members that join one after the other (at most ``FIRST_TARGET_WINDOW_MAX_MS`` after the
  first), and they are all in it without bumping the group epoch, so the first target is
  still epoch 2 and members subscribing together share it, none waiting for another to revoke;

and a heartbeat that cannot hand out the target of the group's epoch yet answers with a
shorter ``HeartbeatIntervalMs`` (KIP-848's interval is per response; librdkafka and the Java
client schedule their next heartbeat from the latest one): the time until the run is expected
to be installed, from the group's last offloaded run; so does one that leaves the member
waiting for partitions others have yet to revoke (they revoke at their next heartbeat), or
whose regex is being resolved (``regex``: its topics come with a later target). At
most ``EXPEDITED_PER_TARGET`` members per group and target get such answers, and at most
``EXPEDITED_PER_MEMBER`` each, so a large group's rebalance adds a bounded number of
heartbeats, not one per member per poll.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from coordinator.runtime import Result

FIRST_TARGET_WINDOW_MAX_MS = 200
"""The longest a new group's first run waits for more members."""
EXPEDITED_PER_TARGET = 64
"""Members of a group given shortened heartbeat intervals per target. It counts members, not
answers: a member polling for a run comes back more often the longer the run takes (on a
loaded machine), and counting its answers let ten such members use up the group's before the
run was installed, each then waiting a whole heartbeat interval."""
EXPEDITED_PER_MEMBER = 10
"""Shortened heartbeat intervals handed out per member and target."""
MIN_EXPEDITED_MS = 20
"""The shortest heartbeat interval handed out."""
RUN_ESTIMATE_MS = 10
"""What an offloaded run is expected to take, start to install, before one was seen."""
MARGIN_MS = 10
"""Added to the expected finish: the install is a write event, the client's clock its own."""

_recent_run_ms: list[int] = []
"""How long the last offloaded run of any group took (this process's estimate for groups
that have not run one yet)."""


def note_run(group: Any, took_ms: int) -> None:
    """An offloaded run of ``group`` was installed ``took_ms`` after it started."""
    group.last_run_ms = took_ms
    _recent_run_ms[:] = [took_ms]


def _estimate(group: Any) -> int:
    if group.last_run_ms is not None:
        return int(group.last_run_ms)
    return _recent_run_ms[0] if _recent_run_ms else RUN_ESTIMATE_MS


def assign_timer_key(group_id: str) -> tuple[str, str]:
    return ("consumer-assign", group_id)


def arm(shard: Any, group_id: str, at_ms: int,
        action: Callable[[Any, int], Result]) -> int:
    """Arm the group's assign timer at ``at_ms`` unless it is armed already (an armed timer was
    computed from the same timestamp and interval, or is a new group's window); returns when
    it fires."""
    key = assign_timer_key(group_id)
    armed = shard.timers.deadline(key)
    if armed is not None:
        return int(armed)
    shard.timers.schedule(key, at_ms, action)
    return at_ms


def next_run_at(group: Any, now_ms: int, interval_ms: int) -> int:
    """When the next run may start: once ``interval_ms`` passed since the last target's
    ``Timestamp`` (now if there is none or it has)."""
    last = group.assignment_timestamp
    return now_ms if last <= 0 else max(now_ms, last + interval_ms)


def expected_wait_ms(shard: Any, group: Any, now_ms: int, run_started: bool = False) -> int:
    """How long until the pending target is expected to be installed: the run started by this
    event (``run_started``) or in flight finishing, or the armed timer's run. A run taking
    longer than expected is asked about again after half the time it has taken so far, so
    members waiting for a slow run come back a few times, not every few milliseconds."""
    estimate = _estimate(group)
    if run_started:
        return estimate + MARGIN_MS
    if group.assignor_run is not None:
        elapsed = now_ms - group.run_started_ms
        if elapsed < estimate:
            return estimate - elapsed + MARGIN_MS
        return elapsed // 2
    at = shard.timers.deadline(assign_timer_key(group.group_id))
    return (0 if at is None else max(0, int(at) - now_ms)) + estimate + MARGIN_MS


def heartbeat_interval(shard: Any, group: Any, member_id: str, now_ms: int, normal_ms: int, *,
                       pending: bool, run_started: bool = False,
                       target_ms: int | None = None, regex_pending: bool = False) -> int:
    """The interval to answer with while the member waits: for the group's pending target
    (``pending``) the time until it is expected; otherwise (the member waits for partitions
    others have yet to revoke) half the time since the target was installed, so it comes back
    soon after the owners' next heartbeats and then less and less often. Within
    [``MIN_EXPEDITED_MS``, ``normal_ms``]; ``normal_ms`` once the group handed out
    ``EXPEDITED_PER_TARGET`` shortened ones for this target. ``target_ms``: when the target
    was computed, if in this event (the group's timestamp otherwise). ``regex_pending``: the
    member's regex is being resolved (its topics come with a later target)."""
    epoch, count, by_member = group.expedited
    if epoch != group.assignment_epoch:
        count, by_member = 0, {}
    mine = by_member.get(member_id, 0)
    if (count >= EXPEDITED_PER_TARGET and not mine) or mine >= EXPEDITED_PER_MEMBER:
        return normal_ms
    if pending:
        wait = expected_wait_ms(shard, group, now_ms, run_started)
    elif regex_pending:
        wait = RUN_ESTIMATE_MS + MARGIN_MS
    else:
        since = group.assignment_timestamp if target_ms is None else target_ms
        wait = (now_ms - since) // 2
    interval = max(MIN_EXPEDITED_MS, min(normal_ms, wait))
    if interval < normal_ms:  # in memory, not a record
        by_member[member_id] = mine + 1
        group.expedited = (group.assignment_epoch, count + (not mine), by_member)
    return interval


def window_close_at(shard: Any, group: Any, now_ms: int, quiet_ms: int) -> int:
    """When a new group's first run starts, a member joining at ``now_ms``: ``quiet_ms`` after
    the last member joined, and at most ``FIRST_TARGET_WINDOW_MAX_MS`` after the first (whose
    join is read back from the timer it armed, as the group did not exist yet)."""
    armed = shard.timers.deadline(assign_timer_key(group.group_id))
    if group.first_join_ms == 0:
        group.first_join_ms = now_ms if armed is None else int(armed) - quiet_ms
    return min(group.first_join_ms + FIRST_TARGET_WINDOW_MAX_MS, now_ms + quiet_ms)
