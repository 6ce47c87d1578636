"""Deferred and incremental resolution of imbalance in consumer groups, in virtual time: the
heartbeat handler, the release timer, the held-partition records and their replay
(``coordinator/groups/consumer/imbalance.py``, ``holds.py``)."""

from __future__ import annotations

import itertools
from dataclasses import replace
from typing import Any

import pytest

from coordinator.config import ServerConfig
from coordinator.groups.common.group_configs import GroupConfigError, validate
from coordinator.groups.consumer.env import ConsumerGroupSettings
from coordinator.groups.consumer.holds import rearm_on_load, release_key
from coordinator.groups.consumer.model import GroupState
from coordinator.groups.replay import new_shard
from coordinator.groups.timeline_records import derive
from coordinator.testing.consumer_group_context import ConsumerGroupContext
from storage.records import (
    ConsumerGroupHeldPartitionsValue,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMetadataValue,
)

DELAY = 10_000


def context(partitions: int = 6, interval_ms: int = 0, **settings: Any) -> ConsumerGroupContext:
    ctx = ConsumerGroupContext(ConsumerGroupSettings(assignment_interval_ms=interval_ms,
                                                     **settings))
    ctx.create_topic("t", partitions)
    return ctx


def owned(ctx: ConsumerGroupContext, member_id: str) -> set[int]:
    return set((ctx.named(ctx.member(member_id).assigned_partitions) or {}).get("t", set()))


def target(ctx: ConsumerGroupContext, member_id: str) -> set[int]:
    return set(ctx.named(ctx.group().target_of(member_id)).get("t", set()))


def settle(ctx: ConsumerGroupContext, rounds: int = 40, step_ms: int = 0) -> None:
    """Every member heartbeats, owning what it was given (so revoking what it was asked to),
    and the clock moves ``step_ms`` (the timers firing), until the group is stable."""
    for _ in range(rounds):
        for member_id in sorted(ctx.group().members):
            member = ctx.member(member_id)
            ctx.heartbeat(member_id=member_id, member_epoch=member.member_epoch,
                          owned={"t": sorted(owned(ctx, member_id))})
        if ctx.group().state is GroupState.STABLE:
            return
        ctx.advance(step_ms)
    raise AssertionError(f"not stable: {ctx.group().state}")


def three_members(ctx: ConsumerGroupContext) -> dict[str, set[int]]:
    for member_id in ("a", "b", "c"):
        ctx.heartbeat(member_id=member_id, topics=["t"])
    settle(ctx)
    return {m: owned(ctx, m) for m in ("a", "b", "c")}


def held(ctx: ConsumerGroupContext) -> dict[str, set[int]]:
    return {m: {p for _, p in h.items} for m, h in ctx.group().held.items()}


def test_a_member_that_leaves_has_its_partitions_held_and_nobody_else_moves() -> None:
    ctx = context(scheduled_rebalance_max_delay_ms=DELAY)
    before = three_members(ctx)
    ctx.heartbeat(member_id="c", member_epoch=-1)
    assert held(ctx) == {"c": before["c"]}
    assert ctx.group().held["c"].deadline_ms == ctx.now + DELAY
    assert ctx.group().held["c"].reason == "left"
    settle(ctx)
    assert {m: target(ctx, m) for m in ("a", "b")} == {m: before[m] for m in ("a", "b")}
    assert owned(ctx, "a") | owned(ctx, "b") == before["a"] | before["b"]


def test_a_member_joining_within_the_delay_gets_exactly_the_held_partitions() -> None:
    ctx = context(scheduled_rebalance_max_delay_ms=DELAY)
    before = three_members(ctx)
    ctx.advance(ctx.env.settings.session_timeout_ms - 1)
    for m in ("a", "b"):  # c is killed: its session expires
        ctx.heartbeat(member_id=m, member_epoch=ctx.member(m).member_epoch,
                      owned={"t": sorted(before[m])})
    ctx.advance(1)
    assert "c" not in ctx.group().members
    assert ctx.group().held["c"].reason == "session-expired"
    ctx.advance(DELAY // 2)
    ctx.heartbeat(member_id="d", topics=["t"])
    settle(ctx)
    assert owned(ctx, "d") == before["c"]
    assert (owned(ctx, "a"), owned(ctx, "b")) == (before["a"], before["b"])
    assert ctx.group().held == {}
    assert release_key("g") in [k for k, _ in ctx.shard.timers.poll(ctx.now + DELAY)]


def test_without_a_new_member_the_held_partitions_are_spread_when_the_delay_ends() -> None:
    ctx = context(scheduled_rebalance_max_delay_ms=DELAY)
    before = three_members(ctx)
    ctx.heartbeat(member_id="c", member_epoch=-1)
    settle(ctx)
    ctx.advance(DELAY - 1)
    settle(ctx)
    assert owned(ctx, "a") | owned(ctx, "b") == before["a"] | before["b"]  # not before
    epoch = ctx.group().group_epoch
    assert release_key("g") in ctx.advance(1)
    assert ctx.group().held == {} and ctx.group().group_epoch == epoch + 1
    settle(ctx)
    assert owned(ctx, "a") | owned(ctx, "b") == set(range(6))
    assert before["a"] <= owned(ctx, "a") and before["b"] <= owned(ctx, "b")  # sticky


def test_with_a_delay_of_0_the_partitions_are_spread_at_once() -> None:
    ctx = context()
    three_members(ctx)
    ctx.heartbeat(member_id="c", member_epoch=-1)
    assert ctx.group().held == {}
    settle(ctx)
    assert owned(ctx, "a") | owned(ctx, "b") == set(range(6))


def test_held_partitions_survive_a_reload_and_the_timer_is_armed_again() -> None:
    ctx = context(scheduled_rebalance_max_delay_ms=DELAY)
    before = three_members(ctx)
    ctx.heartbeat(member_id="c", member_epoch=-1)
    deadline = ctx.group().held["c"].deadline_ms
    values = [v for _, v in ctx.written if isinstance(v, ConsumerGroupHeldPartitionsValue)]
    assert [(v.deadline_ms, v.reason) for v in values] == [(deadline, "left")]
    shard = new_shard(0)
    for offset, (key, value) in enumerate(ctx.written):
        shard.replay(offset, key, value)
    group = shard.groups["g"]
    assert {m: {p for _, p in h.items} for m, h in group.held.items()} == {"c": before["c"]}
    rearm_on_load(shard, ctx.now)
    assert shard.timers.deadline(release_key("g")) == deadline


def test_a_deleted_group_drops_its_holds() -> None:
    from coordinator.groups.consumer.records import group_tombstones
    ctx = context(scheduled_rebalance_max_delay_ms=DELAY)
    three_members(ctx)
    ctx.heartbeat(member_id="c", member_epoch=-1)
    keys = [type(k).__name__ for k, v in group_tombstones(ctx.group()) if v is None]
    assert "ConsumerGroupHeldPartitionsKey" in keys


def test_the_timeline_says_held_and_released() -> None:
    ctx = context(scheduled_rebalance_max_delay_ms=DELAY)
    before = three_members(ctx)
    ctx.heartbeat(member_id="c", member_epoch=-1)
    ctx.heartbeat(member_id="d", topics=["t"])
    entries = [(ctx.now, offset, key, value) for offset, (key, value) in enumerate(ctx.written)]
    events = derive([], entries, group="g", topic_name=lambda tid: "t")
    kinds = [(e["kind"], e.get("member"), e.get("partitions"), e.get("reason"))
             for e in events if e["kind"] in ("held", "released")]
    assert kinds == [("held", "c", {"t": sorted(before["c"])}, "left"),
                     ("released", "c", {"t": sorted(before["c"])}, "taken")]


# ------------------------------------------------------------------------------ incremental
def targets_by_epoch(ctx: ConsumerGroupContext) -> list[tuple[int, dict[str, set[int]]]]:
    """Each target as written: (epoch, member -> partitions)."""
    out: list[tuple[int, dict[str, set[int]]]] = []
    current: dict[str, set[int]] = {}
    for key, value in ctx.written:
        if isinstance(key, ConsumerGroupTargetAssignmentMemberKey):
            if value is None:
                current.pop(key.member_id, None)
            else:
                current[key.member_id] = {p for tp in value.topic_partitions
                                          for p in tp.partitions}
        elif isinstance(value, ConsumerGroupTargetAssignmentMetadataValue):
            out.append((value.assignment_epoch, {m: set(s) for m, s in current.items()}))
    return out


def moved(before: dict[str, set[int]], after: dict[str, set[int]]) -> int:
    owner = {p: m for m, ps in before.items() for p in ps}
    return sum(1 for m, ps in after.items() for p in ps if owner.get(p) not in (None, m))


@pytest.mark.parametrize("assignor", ["uniform", "range", "lag"])
def test_a_scale_up_from_4_to_8_converges_in_rounds_of_at_most_8_moves(assignor: str) -> None:
    ctx = context(64, interval_ms=1000, assignors=("uniform", "range", "lag"))
    for n in range(1, 5):
        ctx.heartbeat(member_id=f"m{n}", topics=["t"], assignor=assignor)
    settle(ctx, step_ms=1000)
    ctx.env.settings = replace(ctx.env.settings, assignment_max_moves=8)
    first = len(targets_by_epoch(ctx))
    ctx.advance(500)
    for n in range(5, 9):  # within the interval: all four are in the first round
        ctx.heartbeat(member_id=f"m{n}", topics=["t"], assignor=assignor)
    settle(ctx, step_ms=250)
    rounds = targets_by_epoch(ctx)[first - 1:]
    counts = [moved(a[1], b[1]) for a, b in itertools.pairwise(rounds)]
    counts = [c for c in counts if c]
    assert max(counts) <= 8
    if assignor == "uniform":
        assert counts == [8, 8, 8, 8]  # 32 partitions to move, 8 a round
    assert {len(target(ctx, f"m{n}")) for n in range(1, 9)} == {8}
    assert ctx.group().group_epoch == ctx.group().assignment_epoch
    assert ctx.group().state is GroupState.STABLE


def test_rounds_respect_racks() -> None:
    ctx = context(12, interval_ms=0, assignment_max_moves=2)
    ctx.heartbeat(member_id="a", topics=["t"], rack_id="r1")
    settle(ctx)
    for member_id, rack in (("b", "r1"), ("c", "r2")):
        ctx.heartbeat(member_id=member_id, topics=["t"], rack_id=rack)
    settle(ctx)
    rounds = targets_by_epoch(ctx)
    assert all(moved(a[1], b[1]) <= 2 for a, b in itertools.pairwise(rounds))
    assert sorted(len(target(ctx, m)) for m in "abc") == [4, 4, 4]


def test_the_group_configs_validate() -> None:
    broker = ServerConfig.from_sources({})
    assert validate({"consumer.scheduled.rebalance.max.delay.ms": "10000",
                     "consumer.assignment.max.moves": "8",
                     "streams.scheduled.rebalance.max.delay.ms": "5000"}, broker) == {
        "consumer.scheduled.rebalance.max.delay.ms": 10000, "consumer.assignment.max.moves": 8,
        "streams.scheduled.rebalance.max.delay.ms": 5000}
    with pytest.raises(GroupConfigError, match="greater than or equal to 0"):
        validate({"consumer.assignment.max.moves": "-1"}, broker)


def test_once_joining_members_took_the_held_partitions_the_others_rebalance() -> None:
    ctx = context(12, interval_ms=1000, scheduled_rebalance_max_delay_ms=DELAY)
    for member_id in ("a", "b", "c"):
        ctx.heartbeat(member_id=member_id, topics=["t"])
    settle(ctx, step_ms=250)
    before = {m: target(ctx, m) for m in "abc"}  # 4 each
    ctx.heartbeat(member_id="c", member_epoch=-1)
    settle(ctx, step_ms=250)  # the target without c: nothing moved
    ctx.advance(100)
    ctx.heartbeat(member_id="d", topics=["t"])  # both within the interval: one target
    ctx.heartbeat(member_id="e", topics=["t"])
    ctx.advance(1000)
    assert target(ctx, "d") | target(ctx, "e") == before["c"]  # first the held ones, 2 each
    assert (target(ctx, "a"), target(ctx, "b")) == (before["a"], before["b"])
    assert ctx.group().held == {} and ctx.group().group_epoch > ctx.group().assignment_epoch
    settle(ctx, step_ms=250)  # then the others rebalance
    assert sorted(len(target(ctx, m)) for m in "abde") == [3, 3, 3, 3]
