"""Rebalances without offload's extra heartbeat (issue 24) in virtual time: a new group's
first run waits for the members joining with the first, runs start from the assign timer as
soon as they may (no heartbeat needed), and members whose target is pending are told to come
back soon, a bounded number of times per target."""

from __future__ import annotations

import pytest

from coordinator.groups.consumer import pacing
from coordinator.groups.consumer.env import ConsumerGroupSettings
from coordinator.groups.consumer.model import MemberState
from coordinator.testing.consumer_group_context import ConsumerGroupContext
from storage.records import ConsumerGroupMetadataValue, ConsumerGroupTargetAssignmentMetadataValue

NORMAL_MS = 5000


@pytest.fixture(autouse=True)
def no_run_seen_yet() -> None:
    """The estimate of a run's duration is this process's last one: none, for each test."""
    pacing._recent_run_ms.clear()


def context(interval_ms: int = 1000, offload: bool = True, window_ms: int = 40
            ) -> ConsumerGroupContext:
    ctx = ConsumerGroupContext(ConsumerGroupSettings(
        heartbeat_interval_ms=NORMAL_MS, assignment_interval_ms=interval_ms,
        assignor_offload=offload, first_target_window_ms=window_ms), offload=True)
    ctx.create_topic("t", 6)
    return ctx


def targets(ctx: ConsumerGroupContext) -> list[tuple[int, int]]:
    return [(v.assignment_epoch, v.timestamp) for _, v in ctx.written
            if isinstance(v, ConsumerGroupTargetAssignmentMetadataValue)]


def epochs(ctx: ConsumerGroupContext) -> list[int]:
    return [v.epoch for _, v in ctx.written if isinstance(v, ConsumerGroupMetadataValue)]


def test_members_joining_with_the_first_share_its_target_at_epoch_2() -> None:
    ctx = context()
    start = ctx.now
    first = ctx.heartbeat(member_id="a", topics=["t"])
    assert (first.member_epoch, ctx.named(first.assignment)) == (1, {})  # epoch 1: empty
    ctx.advance(10)
    ctx.heartbeat(member_id="b", topics=["t"])
    ctx.advance(20)
    ctx.heartbeat(member_id="c", topics=["t"])  # the window closes 40 ms after c
    assert epochs(ctx) == [2]  # no bump while the first target is not computed
    ctx.advance(39)
    assert ctx.pending_runs() == 0
    ctx.advance(1)
    assert ctx.pending_runs() == 1 and ctx.now - start == 70
    ctx.finish_runs()
    assert [epoch for epoch, _ in targets(ctx)] == [2]
    for member in "abc":
        response = ctx.heartbeat(member_id=member, member_epoch=1)
        assigned = ctx.named(response.assignment) or {}
        assert response.member_epoch == 2 and len(assigned["t"]) == 2, member


def test_the_window_closes_at_most_200_ms_after_the_first_member() -> None:
    ctx = context()
    ctx.heartbeat(member_id="m0", topics=["t"])
    for i in range(1, 10):  # one more every 30 ms: each keeps the window open...
        ctx.advance(30)
        if ctx.pending_runs():
            break
        ctx.heartbeat(member_id=f"m{i}", topics=["t"])
    # ...until 200 ms after the first: m0..m6 joined by then (at 0, 30, ..., 180)
    assert ctx.pending_runs() == 1
    assert ctx.offloader is not None
    assert len(ctx.offloader.runs[0][1].prepared.job.member_ids) == 7


def test_a_pending_target_shortens_the_heartbeat_interval_to_when_it_is_expected() -> None:
    ctx = context()
    first = ctx.heartbeat(member_id="a", topics=["t"])
    # the window (40) + the estimate of a run + the margin, not the group's 5,000 ms
    assert first.heartbeat_interval_ms < 200
    ctx.advance(first.heartbeat_interval_ms)
    ctx.finish_runs()
    got = ctx.heartbeat(member_id="a", member_epoch=1)
    assert got.member_epoch == 2 and got.heartbeat_interval_ms == NORMAL_MS  # settled


def test_a_leave_starts_the_run_without_waiting_for_a_heartbeat() -> None:
    ctx = context(window_ms=0)
    ctx.heartbeat(member_id="a", topics=["t"])
    ctx.heartbeat(member_id="b", topics=["t"])
    ctx.finish_runs()
    ctx.advance(1000)
    ctx.finish_runs()  # the second run (b), started by the assign timer
    assert [epoch for epoch, _ in targets(ctx)] == [2, 3]
    for member in "ab":
        ctx.heartbeat(member_id=member, member_epoch=1)
    ctx.advance(5000)
    ctx.heartbeat(member_id="b", member_epoch=-1)  # b leaves: group epoch 4
    assert ctx.pending_runs() == 0
    ctx.advance(0)  # the assign timer, armed by the leave, fires: no heartbeat of a's needed
    assert ctx.pending_runs() == 1
    ctx.finish_runs()
    response = ctx.heartbeat(member_id="a", member_epoch=ctx.member("a").member_epoch)
    assert ctx.named(response.assignment) == {"t": set(range(6))}


def test_runs_are_still_an_interval_apart_and_the_next_one_needs_no_heartbeat() -> None:
    ctx = context(window_ms=0)
    ctx.heartbeat(member_id="a", topics=["t"])
    ctx.advance(5)
    ctx.finish_runs()
    ctx.advance(300)
    joined = ctx.heartbeat(member_id="b", topics=["t"])  # epoch 3: due 1,000 ms after the first
    assert ctx.pending_runs() == 0
    assert 690 < joined.heartbeat_interval_ms < 800  # come back when it should be out
    ctx.advance(699)
    assert ctx.pending_runs() == 0
    ctx.advance(1)
    assert ctx.pending_runs() == 1
    ctx.advance(5)
    ctx.finish_runs()
    (_, first), (_, second) = targets(ctx)
    assert second - first >= 1000


def test_a_result_installed_after_the_group_changed_arms_the_next_run() -> None:
    ctx = context(window_ms=0)
    ctx.heartbeat(member_id="a", topics=["t"])  # run for epoch 2 in flight
    ctx.heartbeat(member_id="b", topics=["t"])  # epoch 3
    ctx.finish_runs()
    assert ctx.group().assignment_epoch == 2
    ctx.advance(1000)
    assert ctx.pending_runs() == 1  # from the timer the install armed
    ctx.finish_runs()
    assert ctx.group().assignment_epoch == 3


def test_a_member_waiting_for_partitions_to_be_released_comes_back_soon() -> None:
    ctx = context(interval_ms=0, offload=False)
    ctx.heartbeat(member_id="a", topics=["t"])
    ctx.advance(1000)
    waiting = ctx.heartbeat(member_id="b", topics=["t"])  # a has yet to revoke b's half
    assert ctx.member("b").state is MemberState.UNRELEASED_PARTITIONS
    assert waiting.heartbeat_interval_ms == pacing.MIN_EXPEDITED_MS
    ctx.advance(1000)
    later = ctx.heartbeat(member_id="b", member_epoch=ctx.member("b").member_epoch)
    assert later.heartbeat_interval_ms == 500  # half the time since the target: backing off


def test_a_large_group_gets_a_bounded_number_of_short_intervals_per_target() -> None:
    ctx = context(window_ms=0)
    ctx.heartbeat(member_id="m0", topics=["t"])
    ctx.finish_runs()
    intervals = [ctx.heartbeat(member_id=f"m{i}", topics=["t"]).heartbeat_interval_ms
                 for i in range(1, 200)]  # all within the assignment interval: one target
    short = [ms for ms in intervals if ms < NORMAL_MS]
    assert len(short) == pacing.EXPEDITED_PER_TARGET
    assert intervals[-1] == NORMAL_MS


def test_a_fenced_members_partitions_move_without_waiting_for_a_heartbeat() -> None:
    ctx = context(window_ms=0)
    ctx.heartbeat(member_id="a", topics=["t"])
    ctx.finish_runs()
    ctx.heartbeat(member_id="b", topics=["t"])
    ctx.advance(1000)
    ctx.finish_runs()
    for member in "ab":  # both settle, then b stops heartbeating
        ctx.heartbeat(member_id=member, member_epoch=ctx.member(member).member_epoch)
    for _ in range(9):
        ctx.advance(5000)
        ctx.heartbeat(member_id="a", member_epoch=ctx.member("a").member_epoch)
    ctx.advance(1000)  # b's session (45 s) expired: fenced, and the run starts from the timer
    assert ctx.group().member("b") is None and ctx.pending_runs() == 1
    ctx.finish_runs()
    response = ctx.heartbeat(member_id="a", member_epoch=ctx.member("a").member_epoch)
    assert ctx.named(response.assignment) == {"t": set(range(6))}


def test_a_member_polling_for_a_slow_run_gets_a_bounded_number_of_short_intervals() -> None:
    ctx = context(window_ms=0)
    first = ctx.heartbeat(member_id="a", topics=["t"])  # the run starts, and does not finish
    intervals = [first.heartbeat_interval_ms]
    for _ in range(pacing.EXPEDITED_PER_MEMBER + 3):
        ctx.advance(intervals[-1])
        intervals.append(ctx.heartbeat(member_id="a", member_epoch=1).heartbeat_interval_ms)
    short = [ms for ms in intervals if ms < NORMAL_MS]
    # the join's answer (the group did not exist yet: nothing to count on) and four more
    assert len(short) == pacing.EXPEDITED_PER_MEMBER + 1
    assert short == sorted(short)  # backing off while the run takes longer than expected
    assert intervals[-1] == NORMAL_MS
