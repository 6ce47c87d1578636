"""Seed 000 for streams groups in virtual time: epoch 1 is the empty assignment and the first
target is epoch 2; the initial rebalance delay holds the first target (ASSIGNMENT_DELAYED) and
coalesces joins; the assignment interval batches changes (it counts only after the initial
delay); offloaded runs (ASSIGNMENT_DELAYED while pending, installed with the time the
computation finished); and the per-group overrides of all three."""

from __future__ import annotations

from typing import Any

import pytest

from coordinator.groups.admin import delete_group
from coordinator.groups.streams.env import StreamsGroupSettings
from coordinator.groups.streams.heartbeat import (
    ASSIGNMENT_DELAYED,
    MISSING_INTERNAL_TOPICS,
    initial_delay_key,
)
from coordinator.groups.streams.model import Endpoint, GroupState, MemberState
from coordinator.groups.streams.target import (
    IN_FLIGHT_DETAIL,
    INITIAL_DELAY_DETAIL,
    INTERVAL_DETAIL,
)
from coordinator.groups.streams.topology import TopicInfo
from coordinator.testing.streams_group_context import (
    G,
    StreamsGroupContext,
    active_tasks,
    plain,
    subtopology,
    topology,
)
from storage.records import (
    StreamsGroupCurrentMemberAssignmentKey,
    StreamsGroupMetadataKey,
    StreamsGroupTargetAssignmentMemberKey,
    StreamsGroupTargetAssignmentMetadataKey,
)

INITIAL_DELAYED = [(ASSIGNMENT_DELAYED, INITIAL_DELAY_DETAIL)]
INTERVAL_DELAYED = [(ASSIGNMENT_DELAYED, INTERVAL_DETAIL)]
IN_FLIGHT = [(ASSIGNMENT_DELAYED, IN_FLIGHT_DETAIL)]


def context(*, delay: int = 0, interval: int = 0, offload: bool = False,
            **settings: Any) -> StreamsGroupContext:
    ctx = StreamsGroupContext(StreamsGroupSettings(
        initial_rebalance_delay_ms=delay, assignment_interval_ms=interval,
        assignor_offload=offload, **settings), offload=offload)
    ctx.create_topic("input", 4)
    ctx.topology = topology(subtopology("0", ("input",)))
    return ctx


def kinds(ctx: StreamsGroupContext, since: int) -> list[str]:
    return [type(r.key).__name__.removeprefix("StreamsGroup").removesuffix("Key")
            for r in ctx.records(since=since)]


def targets(ctx: StreamsGroupContext, since: int) -> list[tuple[int, int]]:
    """(assignment epoch, timestamp) of every target metadata record written since ``since``."""
    return [(r.value.assignment_epoch, r.value.timestamp)
            for r in ctx.records(StreamsGroupTargetAssignmentMetadataKey, since=since)
            if r.value is not None]


# --- the initial rebalance delay --------------------------------------------------------------
def test_epoch_1_is_the_empty_assignment_and_the_first_target_is_epoch_2() -> None:
    ctx = context(delay=3000)
    start = ctx.now
    response = ctx.heartbeat("a")
    assert response.member_epoch == 1
    assert response.statuses == INITIAL_DELAYED
    assert active_tasks(response) == {}
    group = ctx.group()
    assert (group.group_epoch, group.assignment_epoch, group.assignment_timestamp) == (2, 1, 0)
    assert group.state is GroupState.ASSIGNING
    assert ctx.records(StreamsGroupTargetAssignmentMemberKey) == []
    current = ctx.last_value(StreamsGroupCurrentMemberAssignmentKey)
    assert (current.member_epoch, current.previous_member_epoch) == (1, 0)
    assert ctx.shard.timers.is_scheduled(initial_delay_key(G))

    # heartbeats during the delay are told so and keep epoch 1
    ctx.advance(2000)
    response = ctx.heartbeat("a", 1)
    assert (response.member_epoch, response.statuses, response.tasks) == (1, INITIAL_DELAYED,
                                                                          None)
    mark = ctx.mark()
    assert ctx.advance(999) == []
    assert ctx.advance(1) == [initial_delay_key(G)]
    # the timer computed the first target, epoch 2, for every member, at its firing time
    assert targets(ctx, mark) == [(2, start + 3000)]
    response = ctx.heartbeat("a", 1)
    assert (response.member_epoch, response.statuses) == (2, [])
    assert active_tasks(response) == {"0": {0, 1, 2, 3}}
    assert ctx.group().state is GroupState.STABLE


def test_the_initial_delay_coalesces_joins() -> None:
    """Members joining during the delay all reconcile to the empty epoch 1; the first target
    spreads the tasks over all of them at once (spec §3.3 example 1), nobody revokes."""
    ctx = context(delay=3000)
    a, b = ctx.client("a"), ctx.client("b")
    a.join()
    ctx.advance(1000)
    response = b.join()
    assert (response.member_epoch, response.statuses) == (1, INITIAL_DELAYED)
    assert ctx.group().group_epoch == 3
    mark = ctx.mark()
    ctx.advance(2000)  # the timer was armed by the first join only
    assert targets(ctx, mark) == [(3, ctx.now)]
    assert active_tasks(a.heartbeat()) == {"0": {0, 2}}
    assert active_tasks(b.heartbeat()) == {"0": {1, 3}}
    assert {ctx.member(m).state for m in "ab"} == {MemberState.STABLE}
    assert (a.epoch, b.epoch) == (3, 3)


def test_no_delay_means_no_timer_and_the_first_join_gets_epoch_2() -> None:
    ctx = context(delay=0)
    response = ctx.heartbeat("a")
    assert (response.member_epoch, response.statuses) == (2, [])
    assert active_tasks(response) == {"0": {0, 1, 2, 3}}
    assert not ctx.shard.timers.is_scheduled(initial_delay_key(G))


def test_the_delay_of_the_group_overrides_the_brokers() -> None:
    ctx = context(delay=3000)
    ctx.set_group_config(streams_initial_rebalance_delay_ms=500)
    ctx.heartbeat("a")
    assert ctx.advance(500) == [initial_delay_key(G)]
    other = context(delay=3000)
    other.set_group_config(streams_initial_rebalance_delay_ms=0)
    assert other.heartbeat("a").member_epoch == 2


def test_a_group_that_became_empty_waits_again() -> None:
    ctx = context(delay=3000)
    a = ctx.client("a")
    a.join()
    ctx.advance(3000)
    a.heartbeat()
    a.heartbeat()
    assert ctx.group().assignment_epoch == 2
    a.leave()
    assert ctx.group().state is GroupState.EMPTY and ctx.group().group_epoch == 3
    response = a.join()
    # the reused group's last assignment epoch, with nothing, until the delay has passed
    assert (response.member_epoch, response.statuses) == (2, INITIAL_DELAYED)
    assert active_tasks(response) == {}
    assert ctx.group().group_epoch == 4
    mark = ctx.mark()
    ctx.advance(3000)
    assert [epoch for epoch, _ in targets(ctx, mark)] == [4]
    assert active_tasks(a.heartbeat()) == {"0": {0, 1, 2, 3}}


def test_the_delay_timer_does_nothing_for_a_group_emptied_meanwhile() -> None:
    ctx = context(delay=3000)
    ctx.heartbeat("a")
    ctx.heartbeat("a", -1)
    mark = ctx.mark()
    assert ctx.advance(3000) == [initial_delay_key(G)]
    assert ctx.mark() == mark


def test_deleting_the_group_cancels_the_delay() -> None:
    ctx = context(delay=3000)
    ctx.heartbeat("a")
    ctx.heartbeat("a", -1)
    ctx.run(lambda shard, now: delete_group(shard, G))
    assert G not in ctx.shard.groups
    assert ctx.advance(3000) == []


# --- the assignment interval ------------------------------------------------------------------
def test_changes_within_the_interval_are_batched_into_one_target() -> None:
    ctx = context(interval=1000)
    start = ctx.now
    a, b, c = ctx.client("a"), ctx.client("b"), ctx.client("c")
    assert active_tasks(a.join()) == {"0": {0, 1, 2, 3}}  # no target known yet: computed at once
    a.heartbeat()
    mark = ctx.mark()
    ctx.advance(100)
    response = b.join()
    # the group epoch moved on; the target waits: b reconciles to the current target, empty
    assert (response.member_epoch, response.statuses) == (2, INTERVAL_DELAYED)
    assert active_tasks(response) == {}
    ctx.advance(400)
    assert a.heartbeat().statuses == INTERVAL_DELAYED
    ctx.advance(100)
    assert c.join().statuses == INTERVAL_DELAYED
    assert ctx.group().group_epoch == 4
    assert targets(ctx, mark) == []
    ctx.advance(399)
    assert b.heartbeat().statuses == INTERVAL_DELAYED
    ctx.advance(1)  # one interval after the last target was computed
    response = b.heartbeat()
    assert response.statuses == []
    assert targets(ctx, mark) == [(4, start + 1000)]  # both joins in one computation
    ctx.converge(a, b, c)
    assert sorted(len(x.active["0"]) for x in (a, b, c)) == [1, 1, 2]
    assert ctx.group().state is GroupState.STABLE


def test_the_interval_counts_only_after_the_initial_delay() -> None:
    ctx = context(delay=3000, interval=1000)
    a, b = ctx.client("a"), ctx.client("b")
    a.join()
    mark = ctx.mark()
    ctx.advance(3000)  # the first target, at the end of the delay, whatever the interval
    assert [epoch for epoch, _ in targets(ctx, mark)] == [2]
    fired_at = ctx.now
    a.heartbeat()
    ctx.advance(500)
    assert b.join().statuses == INTERVAL_DELAYED  # within the interval after the first target
    ctx.advance(500)
    assert b.heartbeat().statuses == []
    assert targets(ctx, mark) == [(2, fired_at), (3, fired_at + 1000)]


def test_the_delayed_target_of_a_reused_group_does_not_wait_for_the_interval() -> None:
    """The interval starts after the initial delay: a group that became empty and is joined
    again gets its target when the delay ends, even within the interval after the last one."""
    ctx = context(delay=3000, interval=5000)
    ctx.set_group_config(streams_initial_rebalance_delay_ms=0)
    a = ctx.client("a")
    a.join()
    last = ctx.group().assignment_timestamp
    ctx.set_group_config()  # the broker's delay again
    a.leave()
    ctx.advance(100)
    assert a.join().statuses == INITIAL_DELAYED
    mark = ctx.mark()
    ctx.advance(3000)
    assert targets(ctx, mark) == [(4, last + 3100)]  # 3.1 s after the last one, not 5 s
    assert active_tasks(a.heartbeat()) == {"0": {0, 1, 2, 3}}


def test_the_interval_of_the_group_overrides_the_brokers() -> None:
    ctx = context(interval=1000)
    ctx.set_group_config(streams_assignment_interval_ms=0)  # the escape hatch
    ctx.heartbeat("a")
    ctx.advance(1)
    assert ctx.heartbeat("b").statuses == []
    ctx.set_group_config(streams_assignment_interval_ms=5000)
    ctx.advance(1)
    assert ctx.heartbeat("c").statuses == INTERVAL_DELAYED
    ctx.set_group_config(streams_assignment_interval_ms=-1)  # the broker's again
    ctx.advance(998)  # the last target was computed when b joined, 999 ms ago
    assert ctx.heartbeat("d").statuses == INTERVAL_DELAYED
    ctx.advance(1)
    assert ctx.heartbeat("e").statuses == []


# --- offload ----------------------------------------------------------------------------------
def test_an_offloaded_run_is_pending_then_installed_with_its_finish_time() -> None:
    ctx = context(offload=True)
    a = ctx.client("a")
    response = a.join()
    assert (response.member_epoch, response.statuses, active_tasks(response)) == (1, IN_FLIGHT, {})
    assert ctx.pending_runs() == 1 and ctx.group().assignor_run is not None
    assert ctx.records(StreamsGroupTargetAssignmentMetadataKey) == []
    ctx.advance(200)
    response = a.heartbeat()  # the run is still in flight: no second run
    assert (response.member_epoch, response.statuses, response.tasks) == (1, IN_FLIGHT, None)
    assert ctx.pending_runs() == 1
    ctx.advance(50)
    mark = ctx.mark()
    assert ctx.finish_runs() == 1
    assert targets(ctx, mark) == [(2, ctx.now)]  # Timestamp: when the computation finished
    assert ctx.last(StreamsGroupTargetAssignmentMetadataKey).timestamp_ms == ctx.now
    assert [type(r.key).__name__ for r in ctx.records(since=mark)] == [
        "StreamsGroupTargetAssignmentMemberKey", "StreamsGroupTargetAssignmentMetadataKey"]
    assert ctx.group().assignor_run is None
    response = a.heartbeat()
    assert (response.member_epoch, response.statuses) == (2, [])
    assert active_tasks(response) == {"0": {0, 1, 2, 3}}


def test_changes_during_a_run_wait_for_it_then_start_the_next() -> None:
    ctx = context(offload=True)
    a, b = ctx.client("a"), ctx.client("b")
    a.join()
    response = b.join()  # bumps to 3, but a run (for epoch 2) is in flight
    assert response.statuses == IN_FLIGHT and ctx.pending_runs() == 1
    mark = ctx.mark()
    ctx.finish_runs()
    assert [epoch for epoch, _ in targets(ctx, mark)] == [2]
    assert ctx.group().target_of("b").is_empty()  # b was not in that run
    assert active_tasks(a.heartbeat()) == {"0": {0, 1, 2, 3}}  # a reconciles to 2; starts run 3
    assert ctx.pending_runs() == 1
    ctx.finish_runs()
    assert [epoch for epoch, _ in targets(ctx, mark)] == [2, 3]
    ctx.converge(a, b)
    assert (a.active, b.active) == ({"0": {0, 1}}, {"0": {2, 3}})


def test_a_member_that_left_during_a_run_gets_no_target() -> None:
    ctx = context(offload=True)
    ctx.heartbeat("a")
    ctx.finish_runs()
    ctx.heartbeat("a", 1)
    ctx.heartbeat("b")  # run for epoch 3 with a and b
    ctx.heartbeat("b", -1)
    mark = ctx.mark()
    ctx.finish_runs()
    written = ctx.records(StreamsGroupTargetAssignmentMemberKey, since=mark)
    assert [r.key.member_id for r in written] == ["a"]
    assert "b" not in ctx.group().target


def test_a_failed_run_installs_nothing_and_the_next_heartbeat_retries() -> None:
    ctx = context(offload=True)
    ctx.heartbeat("a")
    mark = ctx.mark()
    ctx.finish_runs(error=RuntimeError("worker died"))
    assert ctx.mark() == mark and ctx.group().assignor_run is None
    response = ctx.heartbeat("a", 1)
    assert response.statuses == IN_FLIGHT and ctx.pending_runs() == 1
    ctx.finish_runs()
    assert active_tasks(ctx.heartbeat("a", 1)) == {"0": {0, 1, 2, 3}}


def test_the_result_of_a_deleted_group_is_discarded() -> None:
    ctx = context(offload=True)
    ctx.heartbeat("a")
    ctx.heartbeat("a", -1)
    ctx.run(lambda shard, now: delete_group(shard, G))
    mark = ctx.mark()
    ctx.finish_runs()
    assert ctx.mark() == mark and G not in ctx.shard.groups


def test_the_initial_delay_timer_offloads_its_run() -> None:
    ctx = context(delay=3000, offload=True)
    ctx.heartbeat("a")
    assert ctx.pending_runs() == 0
    ctx.advance(3000)
    assert ctx.pending_runs() == 1
    assert ctx.heartbeat("a", 1).statuses == IN_FLIGHT
    ctx.finish_runs()
    assert active_tasks(ctx.heartbeat("a", 1)) == {"0": {0, 1, 2, 3}}


def test_the_interval_counts_from_the_installed_result() -> None:
    ctx = context(offload=True, interval=1000)
    ctx.heartbeat("a")
    ctx.advance(300)
    ctx.finish_runs()  # finished at +300
    ctx.advance(900)
    assert ctx.heartbeat("b").statuses == INTERVAL_DELAYED
    ctx.advance(100)
    assert ctx.heartbeat("b", 2).statuses == IN_FLIGHT


@pytest.mark.parametrize(("broker", "group", "offloaded"), [
    (True, "false", False), (False, "true", True), (True, None, True), (False, None, False)])
def test_the_offload_setting_of_the_group_overrides_the_brokers(
        broker: bool, group: str | None, offloaded: bool) -> None:
    ctx = context(offload=True)
    ctx.env.settings = StreamsGroupSettings(initial_rebalance_delay_ms=0,
                                            assignment_interval_ms=0, assignor_offload=broker)
    if group is not None:
        ctx.set_group_config(streams_assignor_offload_enable=group)
    response = ctx.heartbeat("a")
    assert (ctx.pending_runs() == 1) is offloaded
    assert response.member_epoch == (1 if offloaded else 2)


# --- the spec's end-to-end example (§14) -------------------------------------------------------
def test_the_end_to_end_example() -> None:
    """Kafka's defaults (delay 3000, interval 1000, no standbys); ``in`` has 2 partitions, the
    changelog is missing at first."""
    ctx = StreamsGroupContext(StreamsGroupSettings(assignor_offload=False), now_ms=0)
    ctx.create_topic("in", 2)
    ctx.topology = topology(subtopology(
        "0", ("in",), changelogs=(TopicInfo("app-store-changelog", 0, -1),)))
    a = ctx.client("A", process_id="pA", user_endpoint=Endpoint("h", 8080))
    b = ctx.client("B", process_id="pB")

    # 1. t=0: A joins
    mark = ctx.mark()
    response = a.join()
    assert kinds(ctx, mark) == ["MemberMetadata", "Topology", "Metadata",
                                "CurrentMemberAssignment"]
    metadata = ctx.last_value(StreamsGroupMetadataKey)
    assert (metadata.epoch, metadata.validated_topology_epoch) == (2, -1)
    current = ctx.last_value(StreamsGroupCurrentMemberAssignmentKey)
    assert (current.member_epoch, current.previous_member_epoch, current.state) == (1, 0, 1)
    assert (response.member_epoch, response.heartbeat_interval_ms) == (1, 5000)
    assert plain(response.tasks) == {"active": {}, "standby": {}, "warmup": {}}
    assert response.statuses == [(ASSIGNMENT_DELAYED, INITIAL_DELAY_DETAIL),
                                 (MISSING_INTERNAL_TOPICS,
                                  "Internal topics are missing: app-store-changelog")]
    assert response.endpoint_information_epoch == 0
    assert [(e.endpoint, e.active, e.standby) for e in response.endpoints or []] == [
        (Endpoint("h", 8080), (), ())]
    assert ctx.group().state is GroupState.NOT_READY
    ctx.create_internal_topics(response.internal_topics)
    assert ctx.topics.topic("app-store-changelog").partitions == 2  # type: ignore[union-attr]

    # 2. t=1000: the topic exists: new hash, ready, one bump; still the initial delay
    ctx.advance(1000)
    mark = ctx.mark()
    response = a.heartbeat()
    assert kinds(ctx, mark) == ["Metadata"]
    metadata = ctx.last_value(StreamsGroupMetadataKey)
    assert (metadata.epoch, metadata.validated_topology_epoch) == (3, 0)
    assert response.statuses == [(ASSIGNMENT_DELAYED, INITIAL_DELAY_DETAIL)]
    assert (response.member_epoch, response.tasks, response.endpoints) == (1, None, None)

    # 3. t=3000: the timer computes the target
    mark = ctx.mark()
    ctx.advance(2000)
    assert kinds(ctx, mark) == ["TargetAssignmentMember", "TargetAssignmentMetadata"]
    assert targets(ctx, mark) == [(3, 3000)]
    assert ctx.group().state is GroupState.RECONCILING

    # 4. t=5000: A gets its tasks; the endpoint epoch moves to 1
    ctx.advance(2000)
    mark = ctx.mark()
    response = a.heartbeat()
    current = ctx.last_value(StreamsGroupCurrentMemberAssignmentKey)
    assert (current.member_epoch, current.previous_member_epoch, current.state) == (3, 1, 1)
    assert [(t.subtopology_id, t.partitions, t.assignment_epochs)
            for t in current.active_tasks] == [("0", (0, 1), (3, 3))]
    assert (response.member_epoch, response.statuses) == (3, [])
    assert plain(response.tasks) == {"active": {"0": {0, 1}}, "standby": {}, "warmup": {}}
    assert response.endpoint_information_epoch == 1
    assert [(e.endpoint, e.active, e.standby) for e in response.endpoints or []] == [
        (Endpoint("h", 8080), (("in", (0, 1)),), ())]
    assert ctx.group().state is GroupState.STABLE

    # 5. t=6000: B joins; the interval has passed since t=3000: target at 4 at once
    ctx.advance(1000)
    mark = ctx.mark()
    response = b.join()
    assert kinds(ctx, mark) == ["MemberMetadata", "Metadata", "TargetAssignmentMember",
                                "TargetAssignmentMember", "TargetAssignmentMetadata",
                                "CurrentMemberAssignment"]
    assert targets(ctx, mark) == [(4, 6000)]
    assert (plain(ctx.group().target["A"]), plain(ctx.group().target["B"])) == (
        {"active": {"0": {0}}, "standby": {}, "warmup": {}},
        {"active": {"0": {1}}, "standby": {}, "warmup": {}})
    assert response.member_epoch == 4 and active_tasks(response) == {}
    assert ctx.member("B").state is MemberState.UNRELEASED_TASKS
    response = a.heartbeat()
    assert (response.member_epoch, active_tasks(response)) == (3, {"0": {0}})
    assert ctx.member("A").state is MemberState.UNREVOKED_TASKS
    response = a.heartbeat()  # reports {0}: acknowledged
    assert (response.member_epoch, response.tasks) == (4, None)
    response = b.heartbeat()
    assert (response.member_epoch, active_tasks(response)) == (4, {"0": {1}})
    assert ctx.member("B").assigned.epochs == {"0": {1: 4}}
    assert ctx.group().state is GroupState.STABLE
