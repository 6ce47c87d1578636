"""Deferred and incremental resolution of imbalance (seed 004, Designs II and III) for streams
groups' active tasks, in virtual time (``coordinator/groups/streams/imbalance.py``)."""

from __future__ import annotations

import pytest

from coordinator.groups.streams.heartbeat import session_key
from coordinator.groups.streams.imbalance import release_key
from coordinator.groups.timeline_records import derive
from coordinator.testing.streams_group_context import (
    G,
    StreamsClient,
    StreamsGroupContext,
    subtopology,
    topology,
)

DELAY = 10_000
SESSION = 45_000


@pytest.fixture
def ctx() -> StreamsGroupContext:
    context = StreamsGroupContext()
    context.create_topic("input", 6)
    context.topology = topology(subtopology("0", ("input",)))
    context.set_group_config(streams_scheduled_rebalance_max_delay_ms=DELAY)
    return context


def three(ctx: StreamsGroupContext) -> tuple[StreamsClient, StreamsClient, StreamsClient]:
    a, b, c = ctx.client("a"), ctx.client("b"), ctx.client("c")
    for client in (a, b, c):
        client.join()
    for _ in range(3):  # an assignment interval, if any, between the targets
        ctx.converge(a, b, c)
        ctx.advance(1000)
    ctx.converge(a, b, c)
    return a, b, c


def expire_c(ctx: StreamsGroupContext, a: StreamsClient, b: StreamsClient) -> None:
    ctx.advance(SESSION - 1)
    a.heartbeat()
    b.heartbeat()
    assert session_key(G, "c") in ctx.advance(1)


def held(ctx: StreamsGroupContext) -> dict[str, set[tuple[str, int]]]:
    return {m: set(h.items) for m, h in ctx.group().held.items()}


def test_a_member_joining_within_the_delay_gets_the_held_active_tasks(
        ctx: StreamsGroupContext) -> None:
    a, b, c = three(ctx)
    before = {x.member_id: x.active for x in (a, b, c)}
    expire_c(ctx, a, b)
    assert held(ctx) == {"c": {("0", p) for p in before["c"]["0"]}}
    assert ctx.group().held["c"].reason == "session-expired"
    ctx.converge(a, b)
    assert (a.active, b.active) == (before["a"], before["b"])  # nobody else moves
    ctx.advance(DELAY // 2)
    d = ctx.client("d")
    d.join()
    ctx.converge(a, b, d)
    assert d.active == before["c"]
    assert (a.active, b.active) == (before["a"], before["b"])
    assert ctx.group().held == {}


def test_without_a_new_member_the_held_tasks_are_spread_when_the_delay_ends(
        ctx: StreamsGroupContext) -> None:
    a, b, c = three(ctx)
    before = {x.member_id: x.active for x in (a, b, c)}
    expire_c(ctx, a, b)
    ctx.advance(DELAY - 1)
    ctx.converge(a, b)
    assert (a.active, b.active) == (before["a"], before["b"])
    assert release_key(G) in ctx.advance(1)
    ctx.converge(a, b)
    assert ctx.group().held == {}
    assert a.active["0"] | b.active["0"] == set(range(6))


def test_held_tasks_survive_a_restart(ctx: StreamsGroupContext) -> None:
    a, b, _ = three(ctx)
    expire_c(ctx, a, b)
    deadline = ctx.group().held["c"].deadline_ms
    later = ctx.restarted(advance_ms=1000)
    assert {m: set(h.items) for m, h in later.group().held.items()} == held(ctx)
    assert later.shard.timers.deadline(release_key(G)) == deadline


def test_the_timeline_says_held_for_tasks(ctx: StreamsGroupContext) -> None:
    a, b, c = three(ctx)
    expire_c(ctx, a, b)
    entries = [(ctx.now, r.offset, r.key, r.value) for r in ctx.written]
    events = [e for e in derive([], entries, group=G) if e["kind"] == "held"]
    assert [(e["member"], e["tasks"], e["reason"]) for e in events] == [
        ("c", {"active": {"0": sorted(c.active["0"])}}, "session-expired")]


def test_once_joining_members_took_the_held_tasks_the_others_rebalance() -> None:
    ctx = StreamsGroupContext()
    ctx.create_topic("input", 12)
    ctx.topology = topology(subtopology("0", ("input",)))
    ctx.set_group_config(streams_scheduled_rebalance_max_delay_ms=DELAY,
                         streams_assignment_interval_ms=1000)
    a, b, c = three(ctx)
    before = {x.member_id: x.active["0"] for x in (a, b, c)}
    expire_c(ctx, a, b)
    ctx.advance(1000)
    ctx.converge(a, b)
    d, e = ctx.client("d"), ctx.client("e")
    d.join()  # both within the interval: one target
    e.join()
    ctx.advance(1000)
    ctx.converge(a, b, d, e)
    assert d.active["0"] | e.active["0"] == before["c"]  # the held ones first, 2 each
    assert ctx.group().group_epoch > ctx.group().assignment_epoch  # another round to come
    ctx.advance(1000)
    ctx.converge(a, b, d, e)  # the others rebalance
    assert sorted(len(x.active["0"]) for x in (a, b, d, e)) == [3, 3, 3, 3]
    assert ctx.group().held == {}


def test_a_scale_up_moves_at_most_the_budget_of_active_tasks_per_target() -> None:
    ctx = StreamsGroupContext()
    ctx.create_topic("input", 12)
    ctx.topology = topology(subtopology("0", ("input",)))
    a, b = ctx.client("a"), ctx.client("b")
    a.join()
    b.join()
    ctx.converge(a, b)
    ctx.set_group_config(streams_assignment_max_moves=2)
    c, d = ctx.client("c"), ctx.client("d")
    mark = ctx.mark()
    c.join()
    d.join()
    ctx.converge(a, b, c, d, rounds=40)
    targets: list[dict[str, set[tuple[str, int]]]] = []
    current: dict[str, set[tuple[str, int]]] = {
        m: {("0", p) for p in ctx.group().target_of(m).active.get("0", ())} for m in "ab"}
    owner = {t: m for m, ts in current.items() for t in ts}
    for record in ctx.records(since=mark):
        if type(record.key).__name__ == "StreamsGroupTargetAssignmentMemberKey":
            assert record.value is not None
            current[record.key.member_id] = {
                (t.subtopology_id, p) for t in record.value.active_tasks for p in t.partitions}
        elif type(record.key).__name__ == "StreamsGroupTargetAssignmentMetadataKey":
            targets.append({m: set(s) for m, s in current.items()})
    for target in targets:
        moved = sum(1 for m, ts in target.items() for t in ts if owner.get(t) not in (None, m))
        assert moved <= 2
        owner = {t: m for m, ts in target.items() for t in ts}
    assert sorted(len(x.active["0"]) for x in (a, b, c, d)) == [3, 3, 3, 3]
    assert len(targets) >= 3  # six moves, two a round
