"""The classic group state machine in virtual time: pure handlers driven through ShardContext
(JoinGroup, SyncGroup, Heartbeat, LeaveGroup, their timers, offset commit validation, KIP-211
expiration, admin, and replay of GroupMetadata records), as Kafka's GroupMetadataManagerTest."""

from __future__ import annotations

import io
from typing import Any

import pytest
from kio.schema.consumer_protocol_subscription.v0.data import ConsumerProtocolSubscription
from kio.serial import entity_writer

from coordinator.groups import admin, classic_protocol
from coordinator.groups.classic import join as classic
from coordinator.groups.classic.join import JoinOutcome, JoinRequest, SyncOutcome, SyncRequest
from coordinator.groups.classic.model import ClassicGroup, ClassicGroupState
from coordinator.groups.classic.session import HeartbeatRequest
from coordinator.groups.commit_validation import validate_commit
from coordinator.groups.common import offsets
from coordinator.groups.expiration import TIMER_KEY, expire_offsets
from coordinator.runtime import Pending, Result
from coordinator.testing import ShardContext
from protocol import ErrorCode
from storage.records import GroupMetadataKey, OffsetCommitKey

G = "g"
S = ClassicGroupState
SESSION = 10_000
REBALANCE = 30_000
RETENTION_MIN = 1
RETENTION = RETENTION_MIN * 60_000
NO_DELAY = {"group.initial.rebalance.delay.ms": 0}


def subscription(*topics: str) -> bytes:
    buf = io.BytesIO()
    buf.write((0).to_bytes(2, "big"))  # version
    entity_writer(ConsumerProtocolSubscription)(
        buf, ConsumerProtocolSubscription(topics=tuple(topics), user_data=None))
    return buf.getvalue()


SUB = subscription("t")
RANGE = (("range", SUB),)


# --- drivers ---------------------------------------------------------------------------------
def join(ctx: ShardContext, member_id: str = "", *, instance: str | None = None,
         session: int = SESSION, rebalance: int = REBALANCE,
         protocols: tuple[tuple[str, bytes], ...] = RANGE, protocol_type: str = "consumer",
         v4: bool = True, group: str = G, client: str = "client") -> Any:
    request = JoinRequest(group_id=group, member_id=member_id, group_instance_id=instance,
                          session_timeout_ms=session, rebalance_timeout_ms=rebalance,
                          protocol_type=protocol_type, protocols=protocols, client_id=client,
                          client_host="/127.0.0.1", require_known_member_id=v4)
    return ctx.run(lambda shard, now: classic_protocol.join(shard, request, now))


def new_member(ctx: ShardContext, **kwargs: Any) -> tuple[str, Any]:
    """KIP-394's two steps: learn a member id, then join with it; (member id, answer)."""
    first = join(ctx, **{k: v for k, v in kwargs.items() if k != "member_id"})
    assert first.error is ErrorCode.member_id_required, first
    return first.member_id, join(ctx, first.member_id, **kwargs)


def answer(ctx: ShardContext, response: Any, key: Any) -> Any:
    """The response, or the answer a Pending response got later."""
    return ctx.answer(key) if isinstance(response, Pending) else response


def sync(ctx: ShardContext, member_id: str, generation: int, *,
         assignments: dict[str, bytes] | None = None, instance: str | None = None,
         protocol_name: str | None = None, group: str = G) -> Any:
    request = SyncRequest(group, generation, member_id, instance, "consumer", protocol_name,
                          tuple((assignments or {}).items()))
    return ctx.run(lambda shard, now: classic_protocol.sync(shard, request, now))


def heartbeat(ctx: ShardContext, member_id: str, generation: int, *,
              instance: str | None = None, group: str = G) -> ErrorCode:
    request = HeartbeatRequest(group, generation, member_id, instance)
    return ctx.run(lambda shard, now: classic_protocol.heartbeat(shard, request, now))


def leave(ctx: ShardContext, *members: tuple[str, str | None], group: str = G) -> list[ErrorCode]:
    batch: list[tuple[str, str | None, str | None]] = [
        (member_id, instance, "test") for member_id, instance in members]
    return ctx.run(lambda shard, now: classic_protocol.leave(shard, group, batch, now))


def commit(ctx: ShardContext, member_id: str = "", generation: int = -1, *,
           instance: str | None = None, partitions: dict[tuple[str, int], int] | None = None,
           group: str = G) -> dict[tuple[str, int], ErrorCode]:
    parts = tuple(offsets.PartitionCommit(t, p, o, -1, "")
                  for (t, p), o in (partitions or {("t", 0): 5}).items())
    request = offsets.OffsetCommit(group, generation, member_id, -1, parts, 9, instance)

    def handler(shard: Any, now: int) -> Result:
        error = validate_commit(shard, request)
        if error is not None:
            return Result((), {(c.topic, c.partition): error for c in request.partitions})
        return offsets.commit(shard.offsets, request, now, 4096, shard.group_exists(group))

    return ctx.run(handler)


def group_of(ctx: ShardContext, group: str = G) -> ClassicGroup:
    found = ctx.shard.groups[group]
    assert isinstance(found, ClassicGroup)
    return found


def committed(ctx: ShardContext, group: str = G) -> dict[tuple[str, int], int]:
    return {tp: c.offset for tp, c in ctx.shard.offsets.group(group).items()}


def jkey(member_id: str, group: str = G) -> Any:
    return classic.join_key(group, member_id)


def skey(member_id: str, group: str = G) -> Any:
    return classic.sync_key(group, member_id)


def stable_group(ctx: ShardContext, count: int, *, instances: list[str | None] | None = None,
                 session: int = SESSION, rebalance: int = REBALANCE,
                 protocols: tuple[tuple[str, bytes], ...] = RANGE) -> tuple[list[str], int]:
    """A Stable group of ``count`` members (initial delay 0); the first is the leader and each
    member's assignment is its own id. Returns (member ids, generation)."""
    instances = instances or [None] * count
    ids: list[str] = []
    for index in range(count):
        kwargs: dict[str, Any] = {"session": session, "rebalance": rebalance,
                                  "protocols": protocols}
        if instances[index] is None:
            member_id, _ = new_member(ctx, **kwargs)
        else:
            member_id = join(ctx, instance=instances[index], **kwargs)
            member_id = member_id.member_id if isinstance(member_id, JoinOutcome) \
                else member_id.key[2]
        ids.append(member_id)
        for earlier, instance in zip(ids[:-1], instances, strict=False):
            if not ctx.is_pending(jkey(earlier)):
                join(ctx, earlier, instance=instance, **kwargs)
    outcomes = {m: ctx.completed.get(jkey(m)) for m in ids}
    last = ctx.completion_log[-1][1] if ctx.completion_log else None
    generation = group_of(ctx).generation_id
    assert group_of(ctx).state is S.COMPLETING_REBALANCE, (outcomes, last)
    leader = group_of(ctx).leader_id
    assert leader == ids[0]
    for member_id, instance in zip(ids[1:], instances[1:], strict=True):
        assert isinstance(sync(ctx, member_id, generation, instance=instance), Pending)
    done = sync(ctx, leader, generation, instance=instances[0],
                assignments={m: m.encode() for m in ids})
    assert done.error is ErrorCode.none and done.assignment == leader.encode()
    for member_id in ids[1:]:
        assert ctx.take(skey(member_id)).assignment == member_id.encode()
    for member_id in ids:
        ctx.completed.pop(jkey(member_id), None)
    assert group_of(ctx).state is S.STABLE
    return ids, generation


@pytest.fixture
def ctx() -> ShardContext:
    return ShardContext(NO_DELAY, now_ms=1_000_000)


# --- the context itself ----------------------------------------------------------------------
def test_context_replays_records_runs_effects_and_fires_timers_in_deadline_order() -> None:
    ctx = ShardContext(NO_DELAY)
    mark = ctx.mark()
    member_id, outcome = new_member(ctx)
    assert outcome.error is ErrorCode.none and outcome.generation_id == 1
    assert group_of(ctx).members[member_id].member_id == member_id
    sync(ctx, member_id, 1, assignments={member_id: b"a"})
    record = ctx.last(GroupMetadataKey)
    assert record.value is not None
    assert record.offset >= mark and record.value.members[0].assignment == b"a"
    fired = ctx.advance(SESSION)
    assert ("classic-session", G, member_id) in fired
    assert ctx.now == SESSION  # the clock stepped through the deadline and on to the target


# --- JoinGroup -------------------------------------------------------------------------------
def test_member_id_required_from_v4_then_join_with_the_given_id(ctx: ShardContext) -> None:
    first = join(ctx, client="app")
    assert first.error is ErrorCode.member_id_required
    assert first.member_id.startswith("app-")
    assert first.member_id in group_of(ctx).pending_members
    assert not group_of(ctx).members and ctx.records(GroupMetadataKey) == []
    outcome = join(ctx, first.member_id)
    assert outcome.error is ErrorCode.none
    assert outcome.member_id == first.member_id and outcome.leader == first.member_id
    assert outcome.generation_id == 1 and outcome.protocol_name == "range"
    assert outcome.members == ((first.member_id, None, SUB),)  # the leader sees the members
    assert group_of(ctx).state is S.COMPLETING_REBALANCE


def test_join_before_v4_gets_a_member_id_and_joins_at_once(ctx: ShardContext) -> None:
    outcome = join(ctx, v4=False)
    assert outcome.error is ErrorCode.none and outcome.member_id
    assert outcome.generation_id == 1 and not group_of(ctx).pending_members


def test_pending_member_is_forgotten_after_its_session_timeout(ctx: ShardContext) -> None:
    first = join(ctx)
    ctx.advance(SESSION - 1)
    assert first.member_id in group_of(ctx).pending_members
    ctx.advance(1)
    assert first.member_id not in group_of(ctx).pending_members
    assert join(ctx, first.member_id).error is ErrorCode.unknown_member_id


def test_known_member_id_for_an_unknown_group_is_unknown_member(ctx: ShardContext) -> None:
    assert join(ctx, "someone").error is ErrorCode.unknown_member_id
    assert G not in ctx.shard.groups


@pytest.mark.parametrize("session", [5_999, 1_800_001])
def test_session_timeout_outside_the_broker_bounds_is_invalid(ctx: ShardContext,
                                                              session: int) -> None:
    assert join(ctx, session=session).error is ErrorCode.invalid_session_timeout
    assert G not in ctx.shard.groups


def test_protocol_is_the_one_most_members_prefer_among_those_all_support(
        ctx: ShardContext) -> None:
    both_rr = (("roundrobin", SUB), ("range", SUB))
    both_range = (("range", SUB), ("roundrobin", SUB))
    a, _ = new_member(ctx, protocols=both_range)
    b, _ = new_member(ctx, protocols=both_rr)
    c, _ = new_member(ctx, protocols=both_rr)
    leader = join(ctx, a, protocols=both_range)
    outcome = ctx.answer(jkey(b))
    assert outcome.error is ErrorCode.none and outcome.protocol_name == "roundrobin"
    assert leader.protocol_name == "roundrobin"
    assert {m for m, _, _ in leader.members} == {a, b, c}
    assert ctx.answer(jkey(c)).members == ()  # only the leader gets the member list


def test_member_without_a_common_protocol_is_inconsistent(ctx: ShardContext) -> None:
    stable_group(ctx, 2)
    assert join(ctx, protocols=(("sticky", SUB),)).error \
        is ErrorCode.inconsistent_group_protocol
    assert join(ctx, protocol_type="connect").error is ErrorCode.inconsistent_group_protocol
    assert join(ctx, protocols=()).error is ErrorCode.inconsistent_group_protocol
    assert group_of(ctx).state is S.STABLE


def test_empty_group_takes_the_protocol_type_of_its_next_first_member(ctx: ShardContext) -> None:
    """Kafka's ClassicGroup.add: the first member of an empty group sets its protocol type, so a
    group id can be reused by another kind of client once empty."""
    ids, _ = stable_group(ctx, 1)
    leave(ctx, (ids[0], None))
    assert group_of(ctx).state is S.EMPTY
    _, first = new_member(ctx, protocol_type="connect", protocols=(("sessioned", b"x"),))
    assert first.error is ErrorCode.none and first.protocol_type == "connect"
    second = join(ctx, protocol_type="connect", protocols=(("sessioned", b"x"),))
    assert second.error is ErrorCode.member_id_required
    assert group_of(ctx).protocol_type == "connect"


def test_first_member_leads_and_a_new_leader_is_chosen_when_it_leaves(ctx: ShardContext) -> None:
    ids, generation = stable_group(ctx, 3)
    assert group_of(ctx).leader_id == ids[0]
    assert leave(ctx, (ids[0], None)) == [ErrorCode.none]
    assert group_of(ctx).state is S.PREPARING_REBALANCE
    join(ctx, ids[1])
    outcome = join(ctx, ids[2])
    assert outcome.error is ErrorCode.none and outcome.generation_id == generation + 1
    assert outcome.leader in (ids[1], ids[2]) and group_of(ctx).leader_id == outcome.leader


def test_group_max_size() -> None:
    ctx = ShardContext({**NO_DELAY, "group.max.size": 2})
    stable_group(ctx, 2)
    assert join(ctx).error is ErrorCode.group_max_size_reached
    assert join(ctx, v4=False).error is ErrorCode.group_max_size_reached
    assert len(group_of(ctx).members) == 2 and group_of(ctx).state is S.STABLE


def test_group_max_size_counts_pending_members() -> None:
    ctx = ShardContext({**NO_DELAY, "group.max.size": 1})
    assert join(ctx).error is ErrorCode.member_id_required
    assert join(ctx).error is ErrorCode.group_max_size_reached


# --- initial rebalance delay (KIP-134) -------------------------------------------------------
def test_initial_delay_is_extended_by_each_new_member() -> None:
    ctx = ShardContext({"group.initial.rebalance.delay.ms": 3000})
    a, first = new_member(ctx)
    assert isinstance(first, Pending)
    ctx.advance(1000)
    b, second = new_member(ctx)
    assert isinstance(second, Pending)
    ctx.advance(1999)  # t = 2999
    assert ctx.is_pending(jkey(a)) and ctx.is_pending(jkey(b))
    ctx.advance(1)  # t = 3000: a member joined during the delay, so it starts again
    assert ctx.is_pending(jkey(a))
    ctx.advance(2999)  # t = 5999
    assert ctx.is_pending(jkey(a))
    ctx.advance(1)  # t = 6000
    outcome = ctx.answer(jkey(a))
    assert outcome.generation_id == 1 and len(outcome.members) == 2
    assert ctx.answer(jkey(b)).generation_id == 1


def test_initial_delay_without_new_members_completes_after_one_delay() -> None:
    ctx = ShardContext({"group.initial.rebalance.delay.ms": 3000})
    a, _ = new_member(ctx)
    ctx.advance(2999)
    assert ctx.is_pending(jkey(a))
    ctx.advance(1)
    assert ctx.answer(jkey(a)).generation_id == 1


def test_initial_delay_is_capped_by_the_rebalance_timeout() -> None:
    """Kafka's InitialDelayedJoin: each extension is min(delay, what is left of the rebalance
    timeout), so the join phase ends exactly at the rebalance timeout with every member that
    joined by then."""
    ctx = ShardContext({"group.initial.rebalance.delay.ms": 3000})
    a, _ = new_member(ctx, rebalance=5000)
    ctx.advance(1000)
    new_member(ctx, rebalance=5000)
    ctx.advance(3000)  # t = 4000: extended past the first delay
    c, _ = new_member(ctx, rebalance=5000)
    assert ctx.is_pending(jkey(a)), "the initial delay ended before the rebalance timeout"
    ctx.advance(999)
    assert ctx.is_pending(jkey(a))
    ctx.advance(1)  # t = 5000: the rebalance timeout
    outcome = ctx.answer(jkey(a))
    assert outcome.generation_id == 1 and len(outcome.members) == 3
    assert ctx.answer(jkey(c)).generation_id == 1


# --- the join phase --------------------------------------------------------------------------
def test_join_phase_completes_once_every_member_rejoined(ctx: ShardContext) -> None:
    (a, b, c), generation = stable_group(ctx, 3)
    assert isinstance(join(ctx, a), Pending)  # the leader rejoining starts a rebalance
    assert group_of(ctx).state is S.PREPARING_REBALANCE
    assert heartbeat(ctx, b, generation) is ErrorCode.rebalance_in_progress
    assert isinstance(join(ctx, b), Pending)
    outcome = join(ctx, c)
    assert outcome.error is ErrorCode.none and outcome.generation_id == generation + 1
    assert ctx.answer(jkey(a)).generation_id == generation + 1
    assert ctx.answer(jkey(b)).generation_id == generation + 1
    assert group_of(ctx).state is S.COMPLETING_REBALANCE


def test_members_that_do_not_rejoin_within_the_rebalance_timeout_are_dropped(
        ctx: ShardContext) -> None:
    (a, b, c), generation = stable_group(ctx, 3, session=40_000, rebalance=REBALANCE)
    start = ctx.now
    join(ctx, a, session=40_000)
    join(ctx, b, session=40_000)
    for _ in range(3):  # c stays alive but never rejoins
        ctx.advance(REBALANCE // 3 - 1)
        assert heartbeat(ctx, c, generation) is ErrorCode.rebalance_in_progress
    assert ctx.is_pending(jkey(a))
    ctx.advance_to(start + REBALANCE)
    outcome = ctx.answer(jkey(a))
    assert outcome.generation_id == generation + 1
    assert {m for m, _, _ in outcome.members} == {a, b}
    assert c not in group_of(ctx).members
    assert heartbeat(ctx, c, generation) is ErrorCode.unknown_member_id


def test_member_waiting_in_join_group_outlives_its_session_timeout(ctx: ShardContext) -> None:
    """Kafka's ClassicGroupMember.hasSatisfiedHeartbeat: an existing member awaiting a join (or
    sync) response is alive; only the rebalance timeout can drop it. A member with the usual
    session.timeout 10 s < max.poll.interval 30 s must not be expelled while it waits."""
    (a, b), generation = stable_group(ctx, 2)
    start = ctx.now
    assert isinstance(join(ctx, a), Pending)
    for _ in range(5):  # b stays alive but never rejoins
        ctx.advance(SESSION // 2)
        assert heartbeat(ctx, b, generation) is ErrorCode.rebalance_in_progress
        assert a in group_of(ctx).members, "a member waiting in JoinGroup expired by session"
    assert ctx.is_pending(jkey(a))
    ctx.advance_to(start + REBALANCE)
    outcome = ctx.answer(jkey(a))
    assert outcome.error is ErrorCode.none and outcome.generation_id == generation + 1
    assert [m for m, _, _ in outcome.members] == [a]


def test_member_waiting_in_sync_group_outlives_its_session_timeout(ctx: ShardContext) -> None:
    (a, b), generation = stable_group(ctx, 2)
    join(ctx, a)
    outcome = join(ctx, b)
    generation = outcome.generation_id
    assert isinstance(sync(ctx, b, generation), Pending)
    ctx.advance(SESSION // 2)  # the leader computes its assignment slowly, heartbeating
    assert heartbeat(ctx, a, generation) is ErrorCode.none
    ctx.advance(SESSION // 2 + 1)
    assert b in group_of(ctx).members, "a member waiting in SyncGroup expired by session"
    done = sync(ctx, a, generation, assignments={a: b"A", b: b"B"})
    assert done.error is ErrorCode.none
    assert ctx.answer(skey(b)).assignment == b"B"


# --- SyncGroup -------------------------------------------------------------------------------
def test_leader_assignment_reaches_followers_and_is_written(ctx: ShardContext) -> None:
    (a, b, c), generation = stable_group(ctx, 3)
    value = ctx.last(GroupMetadataKey).value
    assert value is not None
    assert value.generation == generation and value.leader == a
    assert value.protocol == "range" and value.protocol_type == "consumer"
    assert {m.member_id: m.assignment for m in value.members} == {
        a: a.encode(), b: b.encode(), c: c.encode()}
    assert {m.subscription for m in value.members} == {SUB}
    # a sync in a stable group answers the current assignment at once
    again = sync(ctx, b, generation)
    assert again.error is ErrorCode.none and again.assignment == b.encode()
    assert again.protocol_name == "range" and again.protocol_type == "consumer"


def test_a_member_left_out_of_the_assignment_gets_an_empty_one(ctx: ShardContext) -> None:
    a, _ = new_member(ctx)
    b, _ = new_member(ctx)
    outcome = join(ctx, a)
    assert isinstance(sync(ctx, b, outcome.generation_id), Pending)
    sync(ctx, a, outcome.generation_id, assignments={a: b"all"})
    assert ctx.answer(skey(b)).assignment == b""


def test_rebalance_mid_sync_answers_waiting_syncs_rebalance_in_progress(
        ctx: ShardContext) -> None:
    (a, b), generation = stable_group(ctx, 2)
    join(ctx, a)
    generation = join(ctx, b).generation_id
    assert isinstance(sync(ctx, b, generation), Pending)
    new_member(ctx)  # a join while CompletingRebalance
    assert ctx.answer(skey(b)).error is ErrorCode.rebalance_in_progress
    assert group_of(ctx).state is S.PREPARING_REBALANCE
    assert sync(ctx, a, generation).error is ErrorCode.rebalance_in_progress


def test_sync_errors(ctx: ShardContext) -> None:
    (_a, b), generation = stable_group(ctx, 2, instances=["ia", None])
    assert sync(ctx, b, generation + 1).error is ErrorCode.illegal_generation
    assert sync(ctx, "nobody", generation).error is ErrorCode.unknown_member_id
    assert sync(ctx, b, generation, protocol_name="roundrobin").error \
        is ErrorCode.inconsistent_group_protocol
    assert sync(ctx, b, generation, group="missing").error is ErrorCode.unknown_member_id
    assert sync(ctx, b, generation, group="").error is ErrorCode.invalid_group_id


def test_sync_timeout_drops_members_that_never_synced(ctx: ShardContext) -> None:
    (a, b), generation = stable_group(ctx, 2, session=40_000)
    join(ctx, a, session=40_000)
    generation = join(ctx, b, session=40_000).generation_id
    assert isinstance(sync(ctx, b, generation), Pending)  # the leader never syncs
    ctx.advance(REBALANCE)
    assert a not in group_of(ctx).members
    assert ctx.answer(skey(b)).error is ErrorCode.rebalance_in_progress
    assert group_of(ctx).state is S.PREPARING_REBALANCE


# --- Heartbeat -------------------------------------------------------------------------------
def test_heartbeat_errors_by_state(ctx: ShardContext) -> None:
    assert heartbeat(ctx, "m", 0, group="missing") is ErrorCode.unknown_member_id
    (a, b), generation = stable_group(ctx, 2)
    assert heartbeat(ctx, a, generation) is ErrorCode.none
    assert heartbeat(ctx, a, generation - 1) is ErrorCode.illegal_generation
    assert heartbeat(ctx, "nobody", generation) is ErrorCode.unknown_member_id
    join(ctx, a)  # PreparingRebalance
    assert heartbeat(ctx, b, generation) is ErrorCode.rebalance_in_progress
    join(ctx, b)  # CompletingRebalance
    assert heartbeat(ctx, b, generation + 1) is ErrorCode.none
    assert heartbeat(ctx, b, generation) is ErrorCode.illegal_generation
    leave(ctx, (a, None), (b, None))  # Empty
    assert group_of(ctx).state is S.EMPTY
    assert heartbeat(ctx, a, generation + 1) is ErrorCode.unknown_member_id


def test_session_timeout_removes_a_member_and_starts_a_rebalance(ctx: ShardContext) -> None:
    (a, b), generation = stable_group(ctx, 2)
    for _ in range(3):  # a heartbeats, b is silent
        ctx.advance(SESSION // 3)
        assert heartbeat(ctx, a, generation) is ErrorCode.none
    assert b in group_of(ctx).members and group_of(ctx).state is S.STABLE
    ctx.advance(SESSION - 3 * (SESSION // 3))
    assert b not in group_of(ctx).members
    assert group_of(ctx).state is S.PREPARING_REBALANCE
    assert heartbeat(ctx, a, generation) is ErrorCode.rebalance_in_progress
    outcome = join(ctx, a)
    assert outcome.generation_id == generation + 1 and [m for m, _, _ in outcome.members] == [a]


# --- static membership (KIP-345, KIP-814) ----------------------------------------------------
def test_static_member_restart_keeps_its_assignment_without_a_rebalance(
        ctx: ShardContext) -> None:
    (a, s), generation = stable_group(ctx, 2, instances=[None, "static-1"])
    mark = ctx.mark()
    outcome = join(ctx, instance="static-1")  # restarted: no member id
    assert outcome.error is ErrorCode.none and outcome.member_id != s
    assert outcome.member_id.startswith("static-1-")
    assert outcome.generation_id == generation and not outcome.skip_assignment
    assert outcome.leader == a and outcome.members == ()
    assert group_of(ctx).state is S.STABLE
    assert s not in group_of(ctx).members
    record = ctx.last(GroupMetadataKey)
    assert record.offset >= mark and record.value is not None
    assert {m.member_id for m in record.value.members} == {a, outcome.member_id}
    again = sync(ctx, outcome.member_id, generation, instance="static-1")
    assert again.error is ErrorCode.none and again.assignment == s.encode()
    assert heartbeat(ctx, a, generation) is ErrorCode.none  # the others see no rebalance


def test_static_member_restart_after_its_session_timeout_rebalances(ctx: ShardContext) -> None:
    (a, s), generation = stable_group(ctx, 2, instances=[None, "static-1"])
    for _ in range(2):
        ctx.advance(SESSION // 2)
        heartbeat(ctx, a, generation)
    assert s not in group_of(ctx).members
    assert group_of(ctx).state is S.PREPARING_REBALANCE


@pytest.mark.parametrize("api", ["heartbeat", "sync", "join", "commit", "leave"])
def test_old_instance_of_a_replaced_static_member_is_fenced(ctx: ShardContext, api: str) -> None:
    """Kafka's validateExistingMember: an id that is not the instance's current member id is
    FENCED_INSTANCE_ID, whatever the API, so the zombie stops instead of rejoining."""
    (_a, s), generation = stable_group(ctx, 2, instances=[None, "static-1"])
    assert join(ctx, instance="static-1").error is ErrorCode.none
    if api == "heartbeat":
        error = heartbeat(ctx, s, generation, instance="static-1")
    elif api == "sync":
        error = sync(ctx, s, generation, instance="static-1").error
    elif api == "join":
        error = join(ctx, s, instance="static-1").error
    elif api == "commit":
        (error,) = commit(ctx, s, generation, instance="static-1").values()
    else:
        (error,) = leave(ctx, (s, "static-1"))
    assert error is ErrorCode.fenced_instance_id


def test_static_leader_restart_is_told_to_skip_assignment(ctx: ShardContext) -> None:
    (s, b), generation = stable_group(ctx, 2, instances=["leader-1", None])
    outcome = join(ctx, instance="leader-1")
    assert outcome.error is ErrorCode.none and outcome.skip_assignment
    assert outcome.leader == outcome.member_id and group_of(ctx).leader_id == outcome.member_id
    assert {m for m, _, _ in outcome.members} == {outcome.member_id, b}
    assert outcome.generation_id == generation and group_of(ctx).state is S.STABLE
    assert sync(ctx, outcome.member_id, generation, instance="leader-1").assignment == s.encode()


def test_static_member_restart_with_other_protocols_rebalances(ctx: ShardContext) -> None:
    (a, _s), generation = stable_group(ctx, 2, instances=[None, "static-1"])
    other = (("range", subscription("t", "u")),)
    assert isinstance(join(ctx, instance="static-1", protocols=other), Pending)
    assert group_of(ctx).state is S.PREPARING_REBALANCE
    outcome = join(ctx, a)
    assert outcome.generation_id == generation + 1


def test_static_member_restart_during_a_join_fences_the_waiting_old_join(
        ctx: ShardContext) -> None:
    (a, s, c), generation = stable_group(ctx, 3, instances=[None, "static-1", None])
    join(ctx, a)
    assert isinstance(join(ctx, s, instance="static-1"), Pending)
    restarted = join(ctx, instance="static-1")
    assert isinstance(restarted, Pending)
    assert ctx.answer(jkey(s)).error is ErrorCode.fenced_instance_id
    assert s not in group_of(ctx).members
    outcome = join(ctx, c)  # the last member rejoins: the join phase completes
    assert outcome.error is ErrorCode.none and outcome.generation_id == generation + 1
    assert isinstance(restarted.key, tuple)
    new_id = restarted.key[2]
    assert ctx.answer(jkey(new_id)).generation_id == generation + 1
    assert set(group_of(ctx).members) == {a, new_id, c}


def test_static_member_skips_member_id_required(ctx: ShardContext) -> None:
    outcome = join(ctx, instance="static-1")
    assert outcome.error is ErrorCode.none and outcome.member_id.startswith("static-1-")


# --- LeaveGroup ------------------------------------------------------------------------------
def test_batched_leave(ctx: ShardContext) -> None:
    (a, b, c), generation = stable_group(ctx, 3)
    mark = ctx.mark()
    assert leave(ctx, (a, None), (b, None), ("nobody", None)) == [
        ErrorCode.none, ErrorCode.none, ErrorCode.unknown_member_id]
    assert list(group_of(ctx).members) == [c]
    assert group_of(ctx).state is S.PREPARING_REBALANCE
    assert leave(ctx, (c, None)) == [ErrorCode.none]
    assert group_of(ctx).state is S.EMPTY
    value = ctx.last(GroupMetadataKey).value
    assert ctx.last(GroupMetadataKey).offset >= mark
    assert value is not None
    assert value.members == () and value.generation == generation + 1


def test_leave_by_instance_id(ctx: ShardContext) -> None:
    (a, _s), _ = stable_group(ctx, 2, instances=[None, "static-1"])
    assert leave(ctx, ("", "unknown-instance")) == [ErrorCode.unknown_member_id]
    assert leave(ctx, (a, "static-1")) == [ErrorCode.fenced_instance_id]
    assert leave(ctx, ("", "static-1")) == [ErrorCode.none]
    assert list(group_of(ctx).members) == [a]


def test_leave_of_a_pending_member_and_of_an_unknown_group(ctx: ShardContext) -> None:
    pending = join(ctx).member_id
    assert leave(ctx, (pending, None)) == [ErrorCode.none]
    assert not group_of(ctx).pending_members
    assert leave(ctx, ("x", None), group="missing") == [ErrorCode.unknown_member_id]


# --- offset commit validation (ClassicGroup.validateOffsetCommit) ----------------------------
def test_offset_commit_validation_in_a_stable_group(ctx: ShardContext) -> None:
    (a, s), generation = stable_group(ctx, 2, instances=[None, "static-1"])
    ok = {("t", 0): ErrorCode.none}
    assert commit(ctx, a, generation) == ok
    assert commit(ctx, s, generation, instance="static-1") == ok
    assert commit(ctx, a, generation + 1) == {("t", 0): ErrorCode.illegal_generation}
    assert commit(ctx, "nobody", generation) == {("t", 0): ErrorCode.unknown_member_id}
    assert commit(ctx, a, generation, instance="nobody") == {
        ("t", 0): ErrorCode.unknown_member_id}
    assert commit(ctx, a, generation, instance="static-1") == {
        ("t", 0): ErrorCode.fenced_instance_id}
    # a simple commit (generation -1, no member) is for empty groups only
    assert commit(ctx) == {("t", 0): ErrorCode.unknown_member_id}


def test_offset_commit_validation_during_a_rebalance(ctx: ShardContext) -> None:
    (a, b), generation = stable_group(ctx, 2)
    join(ctx, a)  # PreparingRebalance: the current generation may still commit
    assert commit(ctx, b, generation) == {("t", 0): ErrorCode.none}
    join(ctx, b)  # CompletingRebalance
    assert commit(ctx, b, generation + 1) == {("t", 0): ErrorCode.rebalance_in_progress}
    assert commit(ctx, b, generation) == {("t", 0): ErrorCode.illegal_generation}


def test_offset_commit_validation_in_an_empty_group(ctx: ShardContext) -> None:
    (a,), generation = stable_group(ctx, 1)
    leave(ctx, (a, None))
    assert commit(ctx) == {("t", 0): ErrorCode.none}
    assert commit(ctx, "", -1, partitions={("t", 1): 7}) == {("t", 1): ErrorCode.none}
    assert commit(ctx, a, generation + 1) == {("t", 0): ErrorCode.unknown_member_id}
    assert committed(ctx) == {("t", 0): 5, ("t", 1): 7}


def test_commit_with_a_generation_for_no_group_is_refused(ctx: ShardContext) -> None:
    assert commit(ctx, "m", 3) == {("t", 0): ErrorCode.group_id_not_found}
    assert commit(ctx) == {("t", 0): ErrorCode.none}  # a simple commit creates no group
    assert G not in ctx.shard.groups


# --- offset expiration (KIP-211) -------------------------------------------------------------
def expire(ctx: ShardContext) -> Any:
    return ctx.run(expire_offsets)


@pytest.fixture
def rctx() -> ShardContext:
    return ShardContext({**NO_DELAY, "offsets.retention.minutes": RETENTION_MIN},
                        now_ms=1_000_000)


def test_empty_group_offsets_expire_together_retention_after_it_became_empty(
        rctx: ShardContext) -> None:
    ctx = rctx
    (a,), generation = stable_group(ctx, 1, session=RETENTION * 4)
    commit(ctx, a, generation, partitions={("t", 0): 1, ("t", 1): 2})
    ctx.advance(RETENTION * 2)  # long past the commit: a live group keeps its offsets
    heartbeat(ctx, a, generation)
    commit(ctx, a, generation, partitions={("u", 0): 3})  # a topic it does not subscribe to
    ctx.advance(RETENTION // 2)
    leave(ctx, (a, None))
    empty_at = ctx.now
    assert group_of(ctx).state is S.EMPTY
    ctx.advance_to(empty_at + RETENTION - 1)
    mark = ctx.mark()
    assert expire(ctx) == 0
    assert committed(ctx) == {("t", 0): 1, ("t", 1): 2, ("u", 0): 3}
    ctx.advance(1)
    assert expire(ctx) == 4
    assert committed(ctx) == {}
    assert {(r.key.topic, r.key.partition) for r in ctx.tombstones(OffsetCommitKey, since=mark)} \
        == {("t", 0), ("t", 1), ("u", 0)}
    assert ctx.tombstones(GroupMetadataKey, since=mark)  # the group is removed with them
    assert G not in ctx.shard.groups
    assert admin.describe(ctx.shard, G).error is ErrorCode.group_id_not_found


def test_live_group_keeps_offsets_of_subscribed_topics_forever() -> None:
    ctx = ShardContext({**NO_DELAY, "offsets.retention.minutes": RETENTION_MIN,
                        "offsets.retention.check.interval.ms": 5000}, now_ms=1_000_000)
    ctx.load()  # arms the retention check
    (a,), generation = stable_group(ctx, 1)
    commit(ctx, a, generation, partitions={("t", 0): 1, ("u", 0): 2})
    committed_at = ctx.now
    for _ in range(RETENTION * 10 // (SESSION // 2)):
        ctx.advance(SESSION // 2)
        assert heartbeat(ctx, a, generation) is ErrorCode.none
        if ctx.now < committed_at + RETENTION:
            assert ("u", 0) in committed(ctx)
    assert committed(ctx) == {("t", 0): 1}  # "u" is not subscribed: it expired from its commit
    assert group_of(ctx).state is S.STABLE


def test_live_group_with_undecodable_subscriptions_keeps_all_offsets(rctx: ShardContext) -> None:
    """Kafka expires offsets of a live group only when it knows the subscribed topics."""
    ctx = rctx
    (a,), generation = stable_group(ctx, 1, protocols=(("range", b"\xff\xff"),))
    commit(ctx, a, generation)
    for _ in range(RETENTION * 3 // (SESSION // 2)):
        ctx.advance(SESSION // 2)
        assert heartbeat(ctx, a, generation) is ErrorCode.none
    assert group_of(ctx).state is S.STABLE
    expire(ctx)
    assert committed(ctx) == {("t", 0): 5}


def test_simple_commits_expire_retention_after_their_commit(rctx: ShardContext) -> None:
    ctx = rctx
    commit(ctx, partitions={("t", 0): 1})
    ctx.advance(10_000)
    commit(ctx, partitions={("t", 1): 2})
    ctx.advance(RETENTION - 10_000 - 1)
    assert expire(ctx) == 0
    ctx.advance(1)
    assert expire(ctx) == 1 and committed(ctx) == {("t", 1): 2}
    ctx.advance(9_999)
    assert expire(ctx) == 0
    ctx.advance(1)
    assert expire(ctx) == 1 and committed(ctx) == {}
    assert ctx.records(GroupMetadataKey) == []


def test_retention_check_runs_every_check_interval() -> None:
    ctx = ShardContext({"offsets.retention.minutes": RETENTION_MIN,
                        "offsets.retention.check.interval.ms": 7000})
    ctx.load()
    commit(ctx)
    assert ctx.advance(6999) == []
    assert ctx.advance(1) == [TIMER_KEY]
    fired = ctx.advance(RETENTION)
    assert fired.count(TIMER_KEY) == RETENTION // 7000
    assert committed(ctx) == {}
    assert ctx.shard.timers.is_scheduled(TIMER_KEY)


def test_empty_group_without_offsets_is_removed_at_the_retention_check(
        rctx: ShardContext) -> None:
    """Kafka's cleanupGroupMetadata: a group with no offsets counts as "all offsets expired",
    so an Empty classic group is deleted (tombstone) at the next check."""
    ctx = rctx
    (a,), _ = stable_group(ctx, 1)
    leave(ctx, (a, None))
    mark = ctx.mark()
    expire(ctx)
    assert G not in ctx.shard.groups
    assert ctx.tombstones(GroupMetadataKey, since=mark)


# --- admin -----------------------------------------------------------------------------------
def test_describe_and_list(ctx: ShardContext) -> None:
    (a, b), _ = stable_group(ctx, 2, instances=["ia", None])
    described = admin.describe(ctx.shard, G)
    assert described.error is ErrorCode.none and described.state == "Stable"
    assert described.protocol_type == "consumer" and described.protocol_data == "range"
    assert {(m.member_id, m.group_instance_id, m.assignment) for m in described.members} == {
        (a, "ia", a.encode()), (b, None, b.encode())}
    assert all(m.metadata == SUB and m.client_host == "/127.0.0.1" for m in described.members)
    join(ctx, a, instance="ia")
    during = admin.describe(ctx.shard, G)
    assert during.state == "PreparingRebalance" and during.protocol_data == ""
    assert all(m.assignment == b"" for m in during.members)
    commit(ctx, group="simple")
    listed = {g.group_id: g for g in admin.list_groups(ctx.shard)}
    assert listed[G].state == "PreparingRebalance" and listed[G].protocol_type == "consumer"
    assert listed[G].group_type == "classic"
    assert listed["simple"].state == "Empty" and listed["simple"].protocol_type == ""
    assert admin.describe(ctx.shard, "missing").error is ErrorCode.group_id_not_found


def test_delete_groups(ctx: ShardContext) -> None:
    (a,), generation = stable_group(ctx, 1)
    commit(ctx, a, generation, partitions={("t", 0): 1, ("t", 1): 2})
    assert ctx.run(lambda shard, now: admin.delete_group(shard, G)) is ErrorCode.non_empty_group
    leave(ctx, (a, None))
    mark = ctx.mark()
    assert ctx.run(lambda shard, now: admin.delete_group(shard, G)) is ErrorCode.none
    assert G not in ctx.shard.groups and committed(ctx) == {}
    assert len(ctx.tombstones(OffsetCommitKey, since=mark)) == 2
    assert len(ctx.tombstones(GroupMetadataKey, since=mark)) == 1
    assert ctx.run(lambda shard, now: admin.delete_group(shard, G)) \
        is ErrorCode.group_id_not_found
    commit(ctx, group="simple")
    assert ctx.run(lambda shard, now: admin.delete_group(shard, "simple")) is ErrorCode.none
    assert committed(ctx, "simple") == {}


def test_delete_offsets_of_subscribed_topics_is_refused(ctx: ShardContext) -> None:
    (a,), generation = stable_group(ctx, 1)
    commit(ctx, a, generation, partitions={("t", 0): 1, ("u", 0): 2})
    error, errors = ctx.run(
        lambda shard, now: admin.delete_offsets(shard, G, [("t", 0), ("u", 0)]))
    assert error is ErrorCode.none
    assert errors == {("t", 0): ErrorCode.group_subscribed_to_topic, ("u", 0): ErrorCode.none}
    assert committed(ctx) == {("t", 0): 1}
    leave(ctx, (a, None))  # an empty group subscribes to nothing
    _, errors = ctx.run(lambda shard, now: admin.delete_offsets(shard, G, [("t", 0)]))
    assert errors == {("t", 0): ErrorCode.none} and committed(ctx) == {}
    error, _ = ctx.run(lambda shard, now: admin.delete_offsets(shard, "missing", [("t", 0)]))
    assert error is ErrorCode.group_id_not_found


# --- replay (restart) ------------------------------------------------------------------------
def test_group_survives_a_restart(ctx: ShardContext) -> None:
    (a, s), generation = stable_group(ctx, 2, instances=[None, "static-1"])
    commit(ctx, a, generation)
    after = ctx.restarted(advance_ms=1000)
    group = group_of(after)
    assert group.state is S.STABLE and group.generation_id == generation
    assert group.leader_id == a and group.protocol_name == "range"
    assert group.protocol_type == "consumer"
    assert {m: group.members[m].assignment for m in group.members} == {
        a: a.encode(), s: s.encode()}
    assert group.members[s].group_instance_id == "static-1"
    assert committed(after) == {("t", 0): 5}
    # members carry on: heartbeats and syncs at the generation they had
    assert heartbeat(after, a, generation) is ErrorCode.none
    assert sync(after, s, generation, instance="static-1").assignment == s.encode()
    # the static member restarts too, with all its protocols: no rebalance
    outcome = join(after, instance="static-1", protocols=(*RANGE, ("roundrobin", SUB)))
    assert outcome.error is ErrorCode.none and outcome.generation_id == generation
    # a member that does not come back after the restart expires by its session timeout
    after.advance(SESSION)
    assert a not in group_of(after).members


def test_empty_group_and_its_retention_clock_survive_a_restart(rctx: ShardContext) -> None:
    ctx = rctx
    (a,), generation = stable_group(ctx, 1)
    commit(ctx, a, generation)
    leave(ctx, (a, None))
    empty_at = ctx.now
    after = ctx.restarted(advance_ms=RETENTION - 1)
    assert group_of(after).state is S.EMPTY
    assert group_of(after).generation_id == generation + 1
    assert after.run(expire_offsets) == 0
    after.advance_to(empty_at + RETENTION)
    assert after.run(expire_offsets) == 2
    assert G not in after.shard.groups and committed(after) == {}


def test_deleted_group_stays_deleted_after_a_restart(ctx: ShardContext) -> None:
    (a,), generation = stable_group(ctx, 1)
    commit(ctx, a, generation)
    leave(ctx, (a, None))
    ctx.run(lambda shard, now: admin.delete_group(shard, G))
    after = ctx.restarted()
    assert G not in after.shard.groups and committed(after) == {}


def test_sync_outcome_type() -> None:
    # SyncOutcome and JoinOutcome are what the API layer encodes; their defaults matter there
    assert SyncOutcome(ErrorCode.none).assignment == b""
    assert JoinOutcome(ErrorCode.none).generation_id == -1
