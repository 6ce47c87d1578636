"""The steady heartbeat's fast path (``groups/consumer/steady.py``) answers exactly what the
full handler answers, moves the session deadline as it does, and steps aside whenever the
heartbeat might change something. Virtual time, no asyncio."""

from __future__ import annotations

from dataclasses import replace

import pytest

from coordinator.groups.consumer.env import ConsumerGroupSettings
from coordinator.groups.consumer.heartbeat import HeartbeatRequest, heartbeat
from coordinator.groups.consumer.membership import session_key
from coordinator.groups.consumer.steady import SteadyHeartbeats, steady_heartbeat
from coordinator.runtime import CoordinatorError
from coordinator.testing.consumer_group_context import ConsumerGroupContext
from protocol import ErrorCode


def _stable_pair() -> ConsumerGroupContext:
    ctx = ConsumerGroupContext(ConsumerGroupSettings(assignment_interval_ms=0))
    ctx.create_topic("orders", 4)
    ctx.heartbeat(member_id="m1", topics=["orders"])
    ctx.heartbeat(member_id="m2", topics=["orders"])
    for _ in range(3):  # revoke, then take: both reconcile to the group's epoch
        for member_id in ("m1", "m2"):
            owned = ctx.named(ctx.member(member_id).assigned_partitions)
            ctx.heartbeat(member_id=member_id, member_epoch=ctx.member(member_id).member_epoch,
                          owned=owned)
    group = ctx.group()
    assert group.state.name == "STABLE" and group.group_epoch == group.assignment_epoch
    return ctx


def _steady(ctx: ConsumerGroupContext, member_id: str = "m1", **changes: object
            ) -> HeartbeatRequest:
    request = HeartbeatRequest(group_id="g", member_id=member_id,
                               member_epoch=ctx.member(member_id).member_epoch,
                               client_id="client", client_host="/127.0.0.1")
    return replace(request, **changes)  # type: ignore[arg-type]


def test_a_steady_heartbeat_is_answered_as_the_full_handler_answers_it() -> None:
    ctx = _stable_pair()
    request = _steady(ctx)
    key = session_key("g", "m1")
    ctx.now += 1000
    fast = steady_heartbeat(ctx.shard, ctx.now, ctx.env, request)
    assert fast is not None and not fast.records and fast.effect is None
    fast_deadline = ctx.shard.timers.deadline(key)
    full = heartbeat(ctx.shard, ctx.now, ctx.env, request)
    assert not full.records and full.effect is None
    assert fast.response == full.response
    assert fast.response.assignment is None
    assert fast.response.heartbeat_interval_ms == ctx.env.settings.heartbeat_interval_ms
    assert ctx.shard.timers.deadline(key) == fast_deadline == \
        ctx.now + ctx.env.settings.session_timeout_ms


def test_the_session_still_expires_a_session_timeout_after_the_last_steady_heartbeat() -> None:
    ctx = _stable_pair()
    session_ms = ctx.env.settings.session_timeout_ms
    third = session_ms // 3
    for _ in range(2):  # steady heartbeats keep m1's session; m2 stays silent
        assert ctx.advance(third) == []
        result = steady_heartbeat(ctx.shard, ctx.now, ctx.env, _steady(ctx))
        assert result is not None
        ctx.apply(result)
    last = ctx.now
    assert ctx.advance(session_ms - 2 * third) == [session_key("g", "m2")]  # m2's expired
    assert ctx.group().member("m2") is None and ctx.group().member("m1") is not None
    # m2's removal bumped the epoch: m1's next heartbeat is not steady any more
    assert steady_heartbeat(ctx.shard, ctx.now, ctx.env, _steady(ctx)) is None
    assert session_key("g", "m1") not in ctx.advance(last + session_ms - 1 - ctx.now)
    assert session_key("g", "m1") in ctx.advance(1)
    assert ctx.group().member("m1") is None


@pytest.mark.parametrize("change", [
    {"member_epoch": 1},  # an older epoch: fenced or the lost-response case
    {"member_epoch": 99},  # a newer epoch: fenced
    {"member_id": "stranger"},  # unknown member
    {"subscribed_topic_names": ("orders",)},
    {"rebalance_timeout_ms": 30000},
    {"server_assignor": "range"},
    {"rack_id": "r1"},
    {"instance_id": "i1"},
    {"owned": ()},
    {"client_id": "another-client"},  # the full handler records the new client id
])
def test_anything_beyond_the_steady_shape_takes_the_full_handler(change: dict[str, object]
                                                                  ) -> None:
    ctx = _stable_pair()
    request = _steady(ctx, "m1", **{k: v for k, v in change.items() if k != "member_id"})
    if "member_id" in change:
        request = replace(request, member_id=str(change["member_id"]))
    assert steady_heartbeat(ctx.shard, ctx.now, ctx.env, request) is None


def test_a_pending_target_takes_the_full_handler() -> None:
    ctx = _stable_pair()
    ctx.heartbeat(member_id="m3", topics=["orders"])  # bumps the group epoch
    group = ctx.group()
    assert group.group_epoch > ctx.member("m1").member_epoch
    assert steady_heartbeat(ctx.shard, ctx.now, ctx.env, _steady(ctx)) is None
    answer = ctx.apply(heartbeat(ctx.shard, ctx.now, ctx.env, _steady(ctx)))
    assert answer.member_epoch == group.group_epoch or answer.assignment is not None


def test_a_fenced_member_gets_the_full_handlers_error() -> None:
    ctx = _stable_pair()
    request = _steady(ctx, member_epoch=ctx.member("m1").member_epoch + 5)
    assert steady_heartbeat(ctx.shard, ctx.now, ctx.env, request) is None
    with pytest.raises(CoordinatorError) as raised:
        heartbeat(ctx.shard, ctx.now, ctx.env, request)
    assert raised.value.code is ErrorCode.fenced_member_epoch


def test_a_deleted_topic_takes_the_full_handler_which_revokes_it() -> None:
    ctx = _stable_pair()
    assert ctx.member("m1").assigned_partitions
    ctx.delete_topic("orders")
    # the group hears of it through its subscription metadata; until then the member's
    # partitions are of a topic its subscription no longer resolves to
    group = ctx.group()
    group.subscription_metadata = {}
    assert steady_heartbeat(ctx.shard, ctx.now, ctx.env, _steady(ctx)) is None


def test_the_repeated_steady_answer_follows_the_groups_configs_and_its_member() -> None:
    """``SteadyHeartbeats`` (what a connection's shortcut asks each time) keeps what it checked
    only while the objects it checked are the same: a group config set later changes the
    interval and the session it answers with, and a member that changed takes the full
    handler."""
    ctx = _stable_pair()
    request = _steady(ctx)
    # answered with the interval itself for a body, on the context's shard
    repeated = SteadyHeartbeats(ctx.env, request, lambda index, group_id: ctx.shard, 0,
                                lambda interval: interval)
    key = session_key("g", "m1")
    for _ in range(3):
        ctx.now += 100
        assert repeated.again(ctx.now) == \
            ctx.env.settings.heartbeat_interval_ms
        assert ctx.shard.timers.deadline(key) == ctx.now + ctx.env.settings.session_timeout_ms
    ctx.set_group_configs("g", {"consumer.heartbeat.interval.ms": "7000",
                                "consumer.session.timeout.ms": "50000"})
    ctx.now += 100
    assert repeated.again(ctx.now) == 7000
    assert ctx.shard.timers.deadline(key) == ctx.now + 50000
    full = steady_heartbeat(ctx.shard, ctx.now, ctx.env, request)
    assert full is not None and full.response.heartbeat_interval_ms == 7000
    ctx.set_group_configs("g", {})
    assert repeated.again(ctx.now) == ctx.env.settings.heartbeat_interval_ms
    # the member fenced (epoch bumped by a new member): the group check refuses
    ctx.heartbeat(member_id="m3", topics=["orders"])
    assert repeated.again(ctx.now) is None
    # nor does it answer on a partition the runtime would not run it on at once
    not_ready = SteadyHeartbeats(ctx.env, _steady(ctx, "m2"), lambda index, group_id: None, 0,
                                 lambda interval: interval)
    assert not_ready.again(ctx.now) is None
