"""Client-side assignors (seed 003, the KIP-848 draft): the choice of assignor and member, the
computation's state machine, ConsumerGroupPrepareAssignment / InstallAssignment's checks and
errors, in virtual time."""

from __future__ import annotations

from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator.groups.consumer import client_assignor, client_selection
from coordinator.groups.consumer.client_selection import ClientAssignor, selected_assignor
from coordinator.groups.consumer.describe import describe
from coordinator.groups.consumer.env import ConsumerGroupSettings
from coordinator.groups.replay import new_shard
from coordinator.runtime import CoordinatorError
from coordinator.testing.consumer_group_context import ConsumerGroupContext
from protocol import ErrorCode
from protocol.client_assignors import INVALID_ASSIGNMENT

PY = (ClientAssignor("py", 0, 1),)


def _ctx(enabled: bool = True) -> ConsumerGroupContext:
    ctx = ConsumerGroupContext(ConsumerGroupSettings(assignment_interval_ms=0,
                                                     client_assignors=enabled))
    ctx.create_topic("a", 4)
    ctx.create_topic("b", 2)
    return ctx


def _prepare(ctx: ConsumerGroupContext, member_id: str, epoch: int | None = None,
             group_id: str = "g") -> Any:
    if epoch is None:
        epoch = ctx.member(member_id).member_epoch
    return ctx.apply(client_assignor.prepare(ctx.shard, ctx.now, group_id, member_id, epoch))


def _install(ctx: ConsumerGroupContext, member_id: str, group_epoch: int,
             members: dict[str, dict[str, list[int]]], epoch: int | None = None) -> Any:
    if epoch is None:
        epoch = ctx.member(member_id).member_epoch
    request = client_assignor.InstallRequest(
        "g", member_id, epoch, group_epoch, 0,
        tuple((mid, tuple((ctx.tid(t), tuple(p)) for t, p in parts.items()))
              for mid, parts in members.items()))
    return ctx.apply(client_assignor.install(ctx.shard, ctx.now, ctx.env, request))


def _error(call: Any) -> ErrorCode:
    with pytest.raises(CoordinatorError) as caught:
        call()
    return caught.value.code


def _join_runner(ctx: ConsumerGroupContext, member_id: str = "r",
                 assignors: tuple[ClientAssignor, ...] = PY, timeout_ms: int = 5000) -> Any:
    response = ctx.heartbeat(member_id=member_id, topics=(), client_assignors=assignors,
                             rebalance_timeout_ms=timeout_ms)
    ctx.advance(0)  # the assign timer: the list is in the group now
    return response


def test_members_agree_on_the_assignor_they_prefer_most_and_the_highest_common_version() -> None:
    lists = {"m1": (ClientAssignor("x", 0, 3), ClientAssignor("y", 1, 2)),
             "m2": (ClientAssignor("y", 0, 5), ClientAssignor("x", 2, 2)),
             "m3": ()}  # lists none: no veto
    assert selected_assignor(lists) == ("x", 2)  # positions 0+1 ties y's 1+0: by name
    assert selected_assignor({"m1": (ClientAssignor("x", 0, 1),),
                              "m2": (ClientAssignor("x", 2, 3),)}) is None  # no common version
    assert selected_assignor({"m1": (), "m2": ()}) is None


def test_the_chosen_member_is_told_prepares_and_installs_and_consumers_get_its_target() -> None:
    ctx = _ctx()
    ctx.heartbeat(member_id="c1", topics=("a",), client_id="app-a")
    response = _join_runner(ctx)
    group = ctx.group()
    assert group.client_assignors["r"] == PY
    assert group.client_computation is not None and group.client_computation.member_id == "r"
    assert group.group_epoch > group.assignment_epoch  # the target waits for the member
    hb = ctx.heartbeat(member_id="r", member_epoch=response.member_epoch)
    assert hb.should_compute_assignment
    assert not ctx.heartbeat(member_id="c1", member_epoch=ctx.member("c1").member_epoch,
                             client_id="app-a").should_compute_assignment
    state = _prepare(ctx, "r")
    assert state.assignor == "py" and state.group_epoch == group.group_epoch
    assert [m.member.member_id for m in state.members] == ["c1", "r"]
    assert state.members[0].member.client_id == "app-a"
    assert state.members[0].subscribed_topic_ids == {ctx.tid("a")}
    assert state.members[1].assignor == PY[0]
    assert [t.name for t in state.topics] == ["a"]
    assert _install(ctx, "r", state.group_epoch, {"c1": {"a": [0, 1]}}).error_code == 0
    assert group.client_computation is None and group.assignor_run is None
    assert group.assignment_epoch == state.group_epoch
    assert group.client_assignment.member_id == "r"
    assert describe(ctx.shard, "g", "uniform").assignor == "py"
    c1 = ctx.heartbeat(member_id="c1", member_epoch=ctx.member("c1").member_epoch,
                       client_id="app-a")
    assert ctx.named(c1.assignment) == {"a": {0, 1}}  # 2 and 3 revoked: nobody gets them
    # over: the member is no longer the chosen one
    assert _error(lambda: _prepare(ctx, "r")) is ErrorCode.unknown_member_id


def test_prepare_and_install_check_group_member_epoch_and_the_chosen_one() -> None:
    ctx = _ctx()
    ctx.heartbeat(member_id="c1", topics=("a",))
    response = _join_runner(ctx)
    ctx.heartbeat(member_id="r", member_epoch=response.member_epoch)
    assert _error(lambda: _prepare(ctx, "r", group_id="nope")) is ErrorCode.group_id_not_found
    assert _error(lambda: _prepare(ctx, "ghost", 1)) is ErrorCode.unknown_member_id
    epoch = ctx.member("r").member_epoch
    assert _error(lambda: _prepare(ctx, "r", epoch + 1)) is ErrorCode.stale_member_epoch
    assert _error(lambda: _prepare(ctx, "c1")) is ErrorCode.unknown_member_id  # not chosen
    assert _error(lambda: _install(ctx, "c1", 3, {})) is ErrorCode.unknown_member_id
    assert _error(lambda: _install(ctx, "r", 3, {}, epoch + 1)) is ErrorCode.stale_member_epoch


@pytest.mark.parametrize(("members", "why"), [
    ({"c1": {"a": [4]}}, "does not exist"),
    ({"c1": {"a": [0, 0]}}, "more than once"),
    ({"c1": {"b": [0]}}, "not subscribed to by the group"),
    ({"ghost": {"a": [0]}}, "was not in the group state"),
    ({"r": {"a": [0]}}, "does not subscribe to topic a"),
])
def test_an_invalid_assignment_is_refused_and_changes_nothing(
        members: dict[str, dict[str, list[int]]], why: str) -> None:
    ctx = _ctx()
    ctx.heartbeat(member_id="c1", topics=("a",))
    ctx.heartbeat(member_id="x", topics=("b",))  # "b" is in the group for the bad-topic case
    ctx.heartbeat(member_id="x", member_epoch=-1)
    response = _join_runner(ctx)
    ctx.heartbeat(member_id="r", member_epoch=response.member_epoch)
    state = _prepare(ctx, "r")
    before = len(ctx.written)
    answer = _install(ctx, "r", state.group_epoch, members)
    assert answer.error_code == INVALID_ASSIGNMENT and why in answer.error_message
    assert len(ctx.written) == before and ctx.group().client_computation is not None
    assert _install(ctx, "r", state.group_epoch + 1, {}).error_code == INVALID_ASSIGNMENT


def test_a_stale_installation_is_refused_and_the_group_moving_on_starts_the_next() -> None:
    ctx = _ctx()
    ctx.heartbeat(member_id="c1", topics=("a",))
    response = _join_runner(ctx)
    ctx.heartbeat(member_id="r", member_epoch=response.member_epoch)
    first = _prepare(ctx, "r")
    ctx.heartbeat(member_id="c2", topics=("a",))  # the group moves on
    second = _prepare(ctx, "r")
    assert second.group_epoch > first.group_epoch
    stale = _install(ctx, "r", first.group_epoch, {"c1": {"a": [0, 1, 2, 3]}})
    assert stale.error_code == ErrorCode.stale_member_epoch
    assert _install(ctx, "r", second.group_epoch,
                    {"c1": {"a": [0, 1]}, "c2": {"a": [2, 3]}}).error_code == 0
    group = ctx.group()
    assert group.assignment_epoch == second.group_epoch
    ctx.heartbeat(member_id="c3", topics=("a",))  # and again: a new computation
    ctx.advance(0)
    assert group.client_computation is not None
    # an installation of an older target's epoch is stale too
    assert _install(ctx, "r", second.group_epoch, {}).error_code == ErrorCode.stale_member_epoch


def test_the_chosen_member_leaving_passes_the_computation_on_then_the_server_falls_back() -> None:
    ctx = _ctx()
    ctx.heartbeat(member_id="c1", topics=("a",))
    _join_runner(ctx, "r1", (ClientAssignor("py", 0, 2),), timeout_ms=1000)
    _join_runner(ctx, "r2", PY, timeout_ms=1000)
    group = ctx.group()
    assert group.client_computation.member_id == "r1"  # the highest version
    ctx.heartbeat(member_id="r1", member_epoch=-1)  # leaves mid-computation
    ctx.advance(0)
    assert group.client_computation.member_id == "r2"
    assert _error(lambda: _prepare(ctx, "r2", 0)) is not None  # r2's epoch is not 0
    hb = ctx.heartbeat(member_id="r2", member_epoch=ctx.member("r2").member_epoch)
    assert hb.should_compute_assignment
    ctx.advance(999)
    assert group.client_computation is not None  # still within its rebalance timeout
    ctx.advance(1)  # r2 ran out of time, nobody is left: the server-side assignor computes it
    assert group.client_computation is None and group.assignor_run is None
    assert group.assignment_epoch == group.group_epoch
    assert ctx.named(group.target["c1"]) == {"a": {0, 1, 2, 3}}
    assert "r2" in group.members  # not fenced: fencing is the session's
    ctx.heartbeat(member_id="c2", topics=("a",))  # the next epoch asks the members again
    ctx.advance(0)
    assert group.client_computation is not None and group.client_computation.member_id == "r2"


def test_off_the_lists_are_ignored_and_the_server_assigns() -> None:
    ctx = _ctx(enabled=False)
    ctx.heartbeat(member_id="c1", topics=("a",))
    _join_runner(ctx)
    group = ctx.group()
    assert group.client_assignors == {} and group.client_computation is None
    assert group.assignment_epoch == group.group_epoch


def test_the_records_replay_to_the_same_lists_and_removal_tombstones_them() -> None:
    ctx = _ctx()
    ctx.heartbeat(member_id="c1", topics=("a",))
    response = _join_runner(ctx)
    ctx.heartbeat(member_id="r", member_epoch=response.member_epoch)
    state = _prepare(ctx, "r")
    _install(ctx, "r", state.group_epoch, {"c1": {"a": [0, 1, 2, 3]}})
    replayed = new_shard(0)
    for i, (key, value) in enumerate(ctx.written):
        replayed.replay(i, key, value)
    group = replayed.groups["g"]
    assert group.client_assignors == {"r": PY}
    assert group.client_assignment == ctx.group().client_assignment
    ctx.heartbeat(member_id="r", member_epoch=-1)
    tombstones = [k for k, v in ctx.written if v is None
                  and type(k).__name__ == "ConsumerGroupMemberClientAssignorsKey"]
    assert [k.member_id for k in tombstones] == ["r"]
    assert ctx.group().client_assignors == {}
    assert client_selection.group_tombstones(ctx.group())  # the assignment record's


_PROPOSAL = st.lists(
    st.tuples(st.sampled_from(["c1", "c2", "r", "ghost"]),
              st.dictionaries(st.sampled_from(["a", "b"]),
                              st.lists(st.integers(-1, 5), max_size=4), max_size=2)),
    max_size=4)


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(_PROPOSAL)
def test_an_installation_is_taken_exactly_when_valid_and_never_owns_a_partition_twice(
        proposal: list[tuple[str, dict[str, list[int]]]]) -> None:
    ctx = _ctx()
    ctx.heartbeat(member_id="c1", topics=("a", "b"))
    ctx.heartbeat(member_id="c2", topics=("a",))
    response = _join_runner(ctx)
    ctx.heartbeat(member_id="r", member_epoch=response.member_epoch)
    state = _prepare(ctx, "r")
    subscribed = {"c1": {"a", "b"}, "c2": {"a"}, "r": set()}
    sizes = {"a": 4, "b": 2}
    pairs = [(t, p) for _, parts in proposal for t, ps in parts.items() for p in ps]
    valid = (len({mid for mid, _ in proposal}) == len(proposal)
             and all(mid in subscribed and set(parts) <= subscribed[mid]
                     for mid, parts in proposal)
             and all(0 <= p < sizes[t] for t, p in pairs)
             and len(set(pairs)) == len(pairs))
    request = client_assignor.InstallRequest(
        "g", "r", ctx.member("r").member_epoch, state.group_epoch, 0,
        tuple((mid, tuple((ctx.tid(t), tuple(ps)) for t, ps in parts.items()))
              for mid, parts in proposal))
    answer = ctx.apply(client_assignor.install(ctx.shard, ctx.now, ctx.env, request))
    group = ctx.group()
    assert (answer.error_code == 0) == valid, (answer, proposal)
    if valid:
        owned = [(t, p) for target in group.target.values() for t, ps in target.items()
                 for p in ps]
        assert len(owned) == len(set(owned)) == len(pairs)
        assert group.assignment_epoch == state.group_epoch
    else:
        assert group.client_computation is not None  # still waiting for a valid one
