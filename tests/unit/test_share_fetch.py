"""ShareFetch / ShareAcknowledge as pure handlers in virtual time: share sessions, acquisition,
acknowledgement, acquisition locks, releases, the delivery count limit, persistence."""

from __future__ import annotations

import pytest

from coordinator.groups.share.env import ShareGroupSettings
from coordinator.groups.share.fetch import FetchResult, PartitionRequest
from coordinator.runtime import CoordinatorError
from coordinator.testing.share_group_context import ShareGroupContext
from protocol import ErrorCode
from storage.records import ShareSnapshotKey, ShareUpdateKey

G, T = "workers", "jobs"
ACCEPT, RELEASE, REJECT = 1, 2, 3
LOCK_MS = 30_000


@pytest.fixture
def ctx() -> ShareGroupContext:
    context = ShareGroupContext(ShareGroupSettings(assignment_interval_ms=0,
                                                   assignor_offload=False,
                                                   delivery_count_limit=3))
    context.create_topic(T, 1)
    context.heartbeat(G, "a", 0, [T])
    context.heartbeat(G, "b", 0, [T])
    return context


def tp(ctx: ShareGroupContext, acks: tuple[tuple[int, int, tuple[int, ...]], ...] = ()
       ) -> PartitionRequest:
    return PartitionRequest(ctx.topic_id(T), 0, acks)


def acquired(result: FetchResult) -> list[tuple[int, int, int]]:
    return [tuple(r) for p in result.partitions for r in p.acquired]  # type: ignore[misc]


def error_of(call: object) -> ErrorCode:
    with pytest.raises(CoordinatorError) as raised:
        assert callable(call)
        call()
    return raised.value.code


def test_a_new_session_starts_at_the_log_end_and_acquires_new_records(
        ctx: ShareGroupContext) -> None:
    ctx.logs.produce(T, 0, 5)  # before the first fetch: skipped ("latest")
    first = ctx.fetch(G, "a", 0, [tp(ctx)])
    assert acquired(first) == [] and [p.partition for p in first.partitions] == [0]
    assert ctx.share_partition(G, T, 0).start_offset == 5
    assert ctx.last_value(ShareUpdateKey).start_offset == 5  # the resolved start is kept
    ctx.logs.produce(T, 0, 10)
    again = ctx.fetch(G, "a", 1)
    assert acquired(again) == [(5, 14, 1)]
    assert first.lock_duration_ms == LOCK_MS


def test_records_are_held_by_one_member_at_a_time(ctx: ShareGroupContext) -> None:
    ctx.fetch(G, "a", 0, [tp(ctx)])
    ctx.fetch(G, "b", 0, [tp(ctx)])
    ctx.logs.produce(T, 0, 4)
    ctx.logs.produce(T, 0, 4)
    got_a = acquired(ctx.fetch(G, "a", 1, max_records=4))
    got_b = acquired(ctx.fetch(G, "b", 1, max_records=4))
    assert got_a == [(0, 3, 1)] and got_b == [(4, 7, 1)]


def test_accept_advances_the_start_and_persists_it(ctx: ShareGroupContext) -> None:
    ctx.fetch(G, "a", 0, [tp(ctx)])
    ctx.logs.produce(T, 0, 10)
    ctx.fetch(G, "a", 1)
    mark = ctx.mark()
    result = ctx.acknowledge(G, "a", 2, [tp(ctx, ((0, 9, (ACCEPT,)),))])
    assert [p.ack_error for p in result.partitions] == [ErrorCode.none]
    assert ctx.last(ShareUpdateKey).offset >= mark
    assert ctx.last_value(ShareUpdateKey).start_offset == 10
    assert ctx.share_partition(G, T, 0).in_flight_count() == 0


def test_released_records_come_back_with_the_next_delivery_count(
        ctx: ShareGroupContext) -> None:
    ctx.fetch(G, "a", 0, [tp(ctx)])
    ctx.logs.produce(T, 0, 3)
    ctx.fetch(G, "a", 1)
    ctx.acknowledge(G, "a", 2, [tp(ctx, ((1, 1, (RELEASE,)),))])
    assert acquired(ctx.fetch(G, "b", 0, [tp(ctx)])) == [(1, 1, 2)]


def test_acknowledgements_piggybacked_on_a_fetch_come_first(ctx: ShareGroupContext) -> None:
    ctx.fetch(G, "a", 0, [tp(ctx)])
    ctx.logs.produce(T, 0, 3)
    ctx.fetch(G, "a", 1)
    result = ctx.fetch(G, "a", 2, [tp(ctx, ((0, 0, (ACCEPT,)), (1, 1, (RELEASE,))))])
    assert [p.ack_error for p in result.partitions] == [ErrorCode.none]
    assert acquired(result) == [(1, 1, 2)]  # the released record, to the same member


def test_rejected_records_are_never_delivered_again(ctx: ShareGroupContext) -> None:
    ctx.fetch(G, "a", 0, [tp(ctx)])
    ctx.logs.produce(T, 0, 3)
    ctx.fetch(G, "a", 1)
    ctx.acknowledge(G, "a", 2, [tp(ctx, ((0, 2, (REJECT,)),))])
    ctx.logs.produce(T, 0, 1)
    assert acquired(ctx.fetch(G, "a", 3)) == [(3, 3, 1)]


def test_a_record_released_delivery_count_limit_times_is_archived(
        ctx: ShareGroupContext) -> None:
    ctx.fetch(G, "a", 0, [tp(ctx)])
    ctx.logs.produce(T, 0, 1)
    epoch = 1
    for delivery in (1, 2, 3):
        assert acquired(ctx.fetch(G, "a", epoch)) == [(0, 0, delivery)]
        ctx.acknowledge(G, "a", epoch + 1, [tp(ctx, ((0, 0, (RELEASE,)),))])
        epoch += 2
    assert acquired(ctx.fetch(G, "a", epoch)) == []
    assert ctx.share_partition(G, T, 0).start_offset == 1  # archived: past the start offset


def test_an_expired_acquisition_lock_makes_records_available_again(
        ctx: ShareGroupContext) -> None:
    ctx.fetch(G, "a", 0, [tp(ctx)])
    ctx.fetch(G, "b", 0, [tp(ctx)])
    ctx.logs.produce(T, 0, 2)
    assert acquired(ctx.fetch(G, "a", 1)) == [(0, 1, 1)]
    ctx.advance(LOCK_MS - 1)
    assert acquired(ctx.fetch(G, "b", 1)) == []  # still locked by a
    ctx.advance(1)
    assert acquired(ctx.fetch(G, "b", 2)) == [(0, 1, 2)]
    error = ctx.acknowledge(G, "a", 2, [tp(ctx, ((0, 1, (ACCEPT,)),))]).partitions[0].ack_error
    assert error is ErrorCode.invalid_record_state  # no longer a's


def test_a_member_that_leaves_gives_its_records_back_when_it_closes_its_session(
        ctx: ShareGroupContext) -> None:
    """librdkafka sends its last ShareAcknowledge (epoch -1) and the leave heartbeat at once,
    on two connections: whichever comes first, the acknowledgements count."""
    ctx.fetch(G, "a", 0, [tp(ctx)])
    ctx.fetch(G, "b", 0, [tp(ctx)])
    ctx.logs.produce(T, 0, 3)
    ctx.fetch(G, "a", 1)
    ctx.heartbeat(G, "a", -1)  # the leave first: the session is still open
    assert "a" not in ctx.group(G).members
    assert acquired(ctx.fetch(G, "b", 1)) == []
    result = ctx.acknowledge(G, "a", -1, [tp(ctx, ((0, 0, (ACCEPT,)),))])
    assert result.partitions[0].ack_error is ErrorCode.none
    assert acquired(ctx.fetch(G, "b", 2)) == [(1, 2, 2)]


def test_a_fenced_member_gives_its_records_back_at_once() -> None:
    ctx = ShareGroupContext(ShareGroupSettings(assignment_interval_ms=0, assignor_offload=False,
                                               record_lock_duration_ms=60_000))
    ctx.create_topic(T, 1)
    ctx.heartbeat(G, "a", 0, [T])
    ctx.heartbeat(G, "b", 0, [T])
    ctx.fetch(G, "a", 0, [tp(ctx)])
    ctx.logs.produce(T, 0, 2)
    ctx.fetch(G, "a", 1)
    ctx.advance(44_000)
    ctx.heartbeat(G, "b", ctx.group(G).members["b"].member_epoch)  # b stays
    ctx.advance(1_000)  # a's session timeout, well before its records' 60 s locks
    assert "a" not in ctx.group(G).members
    assert (G, "a") not in ctx.shard.share_sessions
    assert acquired(ctx.fetch(G, "b", 0, [tp(ctx)])) == [(0, 1, 2)]


def test_closing_the_session_acknowledges_then_releases(ctx: ShareGroupContext) -> None:
    ctx.fetch(G, "a", 0, [tp(ctx)])
    ctx.logs.produce(T, 0, 4)
    ctx.fetch(G, "a", 1)
    ctx.acknowledge(G, "a", -1, [tp(ctx, ((0, 1, (ACCEPT,)),))])
    assert (G, "a") not in ctx.shard.share_sessions
    assert acquired(ctx.fetch(G, "b", 0, [tp(ctx)])) == [(2, 3, 2)]
    assert error_of(lambda: ctx.fetch(G, "a", 2)) is ErrorCode.share_session_not_found


def test_session_epochs_are_checked(ctx: ShareGroupContext) -> None:
    assert error_of(lambda: ctx.fetch(G, "a", 1)) is ErrorCode.share_session_not_found
    ctx.fetch(G, "a", 0, [tp(ctx)])
    assert error_of(lambda: ctx.fetch(G, "a", 5)) is ErrorCode.invalid_share_session_epoch
    assert error_of(lambda: ctx.acknowledge(G, "a", 0, [])) \
        is ErrorCode.invalid_share_session_epoch
    assert error_of(lambda: ctx.fetch(G, "a", 0, [tp(ctx, ((0, 0, (ACCEPT,)),))])) \
        is ErrorCode.invalid_request
    ctx.fetch(G, "a", 1)
    ctx.acknowledge(G, "a", 2, [])  # ShareAcknowledge moves the epoch on too
    ctx.fetch(G, "a", 3)


def test_acknowledging_records_not_acquired_is_invalid_record_state(
        ctx: ShareGroupContext) -> None:
    ctx.fetch(G, "a", 0, [tp(ctx)])
    ctx.fetch(G, "b", 0, [tp(ctx)])
    ctx.logs.produce(T, 0, 4)
    ctx.fetch(G, "a", 1)
    mark = ctx.mark()
    result = ctx.acknowledge(G, "b", 1, [tp(ctx, ((0, 3, (ACCEPT,)),))])
    assert result.partitions[0].ack_error is ErrorCode.invalid_record_state
    assert ctx.records(since=mark) == []  # no state change


def test_unknown_topics_are_unknown_topic_id(ctx: ShareGroupContext) -> None:
    import uuid

    result = ctx.fetch(G, "a", 0, [PartitionRequest(uuid.uuid4(), 0)])
    assert [p.error for p in result.partitions] == [ErrorCode.unknown_topic_id]


def test_an_incremental_session_answers_only_what_changed(ctx: ShareGroupContext) -> None:
    ctx.create_topic("other", 1)
    ctx.heartbeat(G, "a", 0, [T, "other"])
    other = PartitionRequest(ctx.topic_id("other"), 0)
    full = ctx.fetch(G, "a", 0, [tp(ctx), other])
    assert len(full.partitions) == 2
    ctx.logs.produce(T, 0, 1)
    incremental = ctx.fetch(G, "a", 1)
    assert [(p.topic_id, p.partition) for p in incremental.partitions] == [(ctx.topic_id(T), 0)]
    forgotten = ctx.fetch(G, "a", 2, forgotten=[(ctx.topic_id("other"), 0)])
    assert forgotten.partitions == []
    assert list(ctx.shard.share_sessions[(G, "a")].partitions) == [(ctx.topic_id(T), 0)]


def test_a_waiting_fetch_acquires_what_was_produced_meanwhile(ctx: ShareGroupContext) -> None:
    assert acquired(ctx.fetch(G, "a", 0, [tp(ctx)])) == []
    ctx.logs.produce(T, 0, 2)
    assert acquired(ctx.fetch_again(G, "a", 1)) == [(0, 1, 1)]


def test_after_a_restart_acknowledged_records_stay_acknowledged(
        ctx: ShareGroupContext) -> None:
    ctx.fetch(G, "a", 0, [tp(ctx)])
    ctx.logs.produce(T, 0, 6)
    ctx.fetch(G, "a", 1)
    ctx.acknowledge(G, "a", 2, [tp(ctx, ((0, 1, (ACCEPT,)), (2, 2, (RELEASE,))))])
    again = ctx.restarted()
    assert again.shard.share_sessions == {}  # sessions are in memory only
    got = acquired(again.fetch(G, "b", 0, [tp(again)]))
    # 0-1 acknowledged: never again; 2 released once: count 2; 3-5 only acquired: count 1
    assert got == [(2, 2, 2), (3, 5, 1)]
    assert again.records(ShareSnapshotKey)  # the initial state snapshots were replayed


def test_acknowledgements_racing_a_members_fencing_are_refused_and_undo_nothing() -> None:
    ctx = ShareGroupContext(ShareGroupSettings(assignment_interval_ms=0, assignor_offload=False))
    ctx.create_topic(T, 1)
    ctx.heartbeat(G, "a", 0, [T])
    ctx.heartbeat(G, "b", 0, [T])
    ctx.fetch(G, "a", 0, [tp(ctx)])
    ctx.fetch(G, "b", 0, [tp(ctx)])
    ctx.logs.produce(T, 0, 4)
    assert acquired(ctx.fetch(G, "a", 1)) == [(0, 3, 1)]
    ctx.advance(44_000)
    ctx.heartbeat(G, "b", ctx.group(G).members["b"].member_epoch)
    ctx.advance(1_000)  # a is fenced: its session closes, its records go back
    assert "a" not in ctx.group(G).members
    # a's acknowledgement and its waiting fetch arrive after the fencing
    assert error_of(lambda: ctx.acknowledge(G, "a", 2, [tp(ctx, ((0, 3, (ACCEPT,)),))])) \
        is ErrorCode.share_session_not_found
    assert acquired(ctx.fetch_again(G, "a", 2)) == []
    assert ctx.share_partition(G, T, 0).start_offset == 0  # nothing was accepted
    assert acquired(ctx.fetch(G, "b", 1)) == [(0, 3, 2)]


def test_a_session_reopened_at_epoch_zero_keeps_the_members_records() -> None:
    ctx = ShareGroupContext(ShareGroupSettings(assignment_interval_ms=0, assignor_offload=False))
    ctx.create_topic(T, 1)
    ctx.heartbeat(G, "a", 0, [T])
    ctx.fetch(G, "a", 0, [tp(ctx)])
    ctx.logs.produce(T, 0, 4)
    assert acquired(ctx.fetch(G, "a", 1)) == [(0, 3, 1)]
    # a new session (epoch 0) replaces the old one, as Kafka's ShareSessionCache does; the
    # records stay the member's, to acknowledge in the new session
    assert acquired(ctx.fetch(G, "a", 0, [tp(ctx)])) == []
    assert error_of(lambda: ctx.fetch(G, "a", 2)) is ErrorCode.invalid_share_session_epoch
    ok = ctx.acknowledge(G, "a", 1, [tp(ctx, ((0, 3, (ACCEPT,)),))])
    assert ok.partitions[0].ack_error is ErrorCode.none
    assert ctx.share_partition(G, T, 0).start_offset == 4
