"""The share-partition state machine (``coordinator.groups.share.partition``), in virtual time:
acquire, acknowledge, lock expiry, member release, the start offset, and loading state."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from coordinator.groups.share.partition import (
    ACCEPT,
    ACKNOWLEDGED,
    ACQUIRED,
    ARCHIVED,
    AVAILABLE,
    GAP,
    REJECT,
    RELEASE,
    RENEW,
    AcquiredRange,
    Changes,
    SharePartition,
    StateBatch,
)
from protocol import ErrorCode

LOCK_MS = 30_000
LIMIT = 5  # share.delivery.count.limit


def log(first: int = 0, last: int = 9_999, size: int = 10) -> list[tuple[int, int]]:
    """The log's record batches: ``size`` records each."""
    return [(b, min(b + size - 1, last)) for b in range(first, last + 1, size)]


def acquire(sp: SharePartition, member: str = "m1", max_records: int = 500,
            batch_size: int = 500, max_in_flight: int = 2000, now: int = 0,
            batches: list[tuple[int, int]] | None = None) -> tuple[AcquiredRange, ...]:
    acq = sp.acquire(member, log() if batches is None else batches, max_records, batch_size,
                     max_in_flight, now, LOCK_MS)
    return () if acq is None else acq.ranges


def ack(sp: SharePartition, member: str, *batches: tuple[int, int, list[int]],
        limit: int = LIMIT) -> tuple[ErrorCode, Changes]:
    return sp.acknowledge(member, list(batches), limit)


def states(sp: SharePartition, first: int, last: int) -> list[tuple[int, int, str | None]]:
    out = []
    for o in range(first, last + 1):
        s = sp.state_of(o)
        assert s is not None, o
        out.append(s)
    return out


# ------------------------------------------------------------------ acquire


def test_new_records_are_acquired_whole_batches_with_count_one() -> None:
    sp = SharePartition(start_offset=0)
    assert sp.next_fetch_offset() == 0 and sp.can_acquire(2000)
    acq = sp.acquire("m1", log(), 25, 500, 2000, 1_000, LOCK_MS)
    assert acq is not None
    # 25 records end inside the batch 20-29: the whole batch is acquired
    assert acq.ranges == (AcquiredRange(0, 29, 1),)
    assert acq.member_id == "m1" and acq.lock_deadline_ms == 1_000 + LOCK_MS
    assert acq.record_count == 30
    assert sp.in_flight_count() == 30 and sp.acquired_count() == 30
    assert sp.next_fetch_offset() == 30 and sp.end_offset == 29
    # a producer batch larger than max_records is acquired whole
    big = SharePartition(start_offset=0)
    assert acquire(big, max_records=500, batches=[(0, 999), (1000, 1999)]) == (
        AcquiredRange(0, 999, 1),)


def test_new_records_are_split_at_batch_boundaries_by_batch_size() -> None:
    sp = SharePartition(start_offset=0)
    assert acquire(sp, max_records=100, batch_size=25) == (
        AcquiredRange(0, 29, 1), AcquiredRange(30, 59, 1), AcquiredRange(60, 89, 1),
        AcquiredRange(90, 99, 1))
    # ids are fresh per acquisition
    a = sp.acquire("m1", log(), 10, 10, 2000, 0, LOCK_MS)
    b = sp.acquire("m1", log(), 10, 10, 2000, 0, LOCK_MS)
    assert a is not None and b is not None and a.acquisition_id != b.acquisition_id


def test_acquire_starts_at_the_start_offset_inside_a_batch_and_rebases_past_missing_data(
) -> None:
    sp = SharePartition(start_offset=15)
    assert acquire(sp, max_records=5, batches=[(10, 19), (20, 29)]) == (
        AcquiredRange(15, 19, 1),)
    empty_window = SharePartition(start_offset=0)  # the log starts at 100 (retention)
    assert acquire(empty_window, max_records=5, batches=log(100, 199)) == (
        AcquiredRange(100, 109, 1),)
    assert empty_window.start_offset == 100


def test_max_in_flight_bounds_new_records_and_released_ones_stay_acquirable() -> None:
    sp = SharePartition(start_offset=0)
    assert acquire(sp, max_records=1990, batch_size=2000) == (AcquiredRange(0, 1989, 1),)
    # room for 10 more, aligned to the batch end
    assert acquire(sp, max_records=500, max_in_flight=2000) == (AcquiredRange(1990, 1999, 1),)
    assert not sp.can_acquire(2000)
    assert acquire(sp, max_in_flight=2000) == ()  # at the limit: nothing new
    err, _ = ack(sp, "m1", (100, 109, [RELEASE]))
    assert err is ErrorCode.none
    assert sp.can_acquire(2000) and sp.next_fetch_offset() == 100
    # at the limit, released records up to the end offset are still acquired
    assert acquire(sp, "m2", max_in_flight=2000, batches=log(100)) == (
        AcquiredRange(100, 109, 2),)
    assert acquire(sp, "m2", max_in_flight=2000, batches=log(100)) == ()


def test_released_records_are_reacquired_first_with_count_plus_one() -> None:
    sp = SharePartition(start_offset=0)
    acquire(sp, max_records=30)
    ack(sp, "m1", (10, 14, [RELEASE]), (20, 24, [RELEASE]))
    assert sp.next_fetch_offset() == 10
    acq = sp.acquire("m2", log(10), 15, 500, 2000, 5, LOCK_MS)
    assert acq is not None
    # 10 released records, then new ones from 30 up to the batch end of the 15th record
    assert acq.ranges == (AcquiredRange(10, 14, 2), AcquiredRange(20, 24, 2),
                          AcquiredRange(30, 39, 1))
    assert states(sp, 13, 15) == [(ACQUIRED, 2, "m2"), (ACQUIRED, 2, "m2"),
                                  (ACQUIRED, 1, "m1")]


def test_reacquisition_stops_at_the_log_batch_where_max_records_is_reached() -> None:
    sp = SharePartition(start_offset=0)
    acquire(sp, max_records=100)
    ack(sp, "m1", (0, 99, [RELEASE]))
    assert acquire(sp, "m2", max_records=15) == (AcquiredRange(0, 19, 2),)
    assert acquire(sp, "m2", max_records=1) == (AcquiredRange(20, 29, 2),)


def test_contiguous_reacquired_offsets_with_the_same_count_merge() -> None:
    sp = SharePartition(start_offset=0)
    acquire(sp, max_records=10)
    ack(sp, "m1", (0, 9, [RELEASE]))
    acquire(sp, "m1", max_records=5, batches=[(0, 4), (5, 9)])
    ack(sp, "m1", (0, 4, [RELEASE]))  # 0-4 count 2, 5-9 count 1, all AVAILABLE
    assert acquire(sp, "m2", max_records=10) == (AcquiredRange(0, 4, 3), AcquiredRange(5, 9, 2))


def test_available_records_the_log_no_longer_has_are_archived() -> None:
    sp = SharePartition(start_offset=0)
    acquire(sp, max_records=30)
    ack(sp, "m1", (0, 19, [RELEASE]))
    # compaction removed 0-14: the fetch from 0 returns batches from 15 on
    assert acquire(sp, "m2", max_records=10, batches=[(15, 19), (20, 29), (30, 39)]) == (
        AcquiredRange(15, 19, 2), AcquiredRange(30, 39, 1))
    assert sp.start_offset == 15  # 0-14 archived and out of the window


def test_missing_offsets_after_the_end_are_skipped_holes() -> None:
    sp = SharePartition(start_offset=0)
    acquire(sp, max_records=10)
    assert acquire(sp, "m2", max_records=10, batches=[(20, 29)]) == (AcquiredRange(20, 29, 1),)
    assert states(sp, 10, 10) == [(ARCHIVED, 0, None)]
    # an acknowledgement over the hole skips it, and the start offset passes it
    err, changes = ack(sp, "m1", (0, 9, [ACCEPT]))
    assert err is ErrorCode.none and sp.start_offset == 20 and changes.start_offset == 20
    err, _ = ack(sp, "m2", (15, 29, [ACCEPT]))
    assert err is ErrorCode.none and sp.start_offset == 30 and sp.in_flight_count() == 0


def test_nothing_is_acquired_without_data_records_or_a_start_offset() -> None:
    sp = SharePartition()
    assert sp.start_offset == -1 and sp.next_fetch_offset() == -1 and sp.can_acquire(10)
    assert acquire(sp) == ()
    changes = sp.resolve_start(42)
    assert changes and changes.start_offset == 42 and sp.next_fetch_offset() == 42
    assert not sp.resolve_start(7) and sp.start_offset == 42  # once
    assert acquire(sp, batches=[]) == ()
    assert acquire(sp, batches=[(0, 41)]) == ()  # all before the fetch offset
    assert acquire(sp, max_records=0) == ()


# ------------------------------------------------------------------ acknowledge


def test_ack_types_map_to_states_and_changes() -> None:
    sp = SharePartition(start_offset=0)
    acquire(sp, max_records=40)
    err, changes = ack(sp, "m1", (10, 19, [ACCEPT]), (20, 24, [RELEASE]),
                       (25, 29, [REJECT]), (30, 34, [GAP]))
    assert err is ErrorCode.none
    assert changes == Changes((StateBatch(10, 19, ACKNOWLEDGED, 1),
                               StateBatch(20, 24, AVAILABLE, 1),
                               StateBatch(25, 34, ARCHIVED, 1)), 0, False)
    assert states(sp, 19, 20) == [(ACKNOWLEDGED, 1, None), (AVAILABLE, 1, None)]
    assert sp.next_fetch_offset() == 20
    assert sp.delivery_complete_count() == 20
    assert sp.acquired_count() == 15  # 0-9 and 35-39


def test_per_offset_ack_types_within_one_range() -> None:
    sp = SharePartition(start_offset=0)
    acquire(sp, max_records=10)
    err, changes = ack(sp, "m1", (2, 6, [ACCEPT, ACCEPT, RELEASE, REJECT, GAP]))
    assert err is ErrorCode.none
    assert changes.batches == (StateBatch(2, 3, ACKNOWLEDGED, 1), StateBatch(4, 4, AVAILABLE, 1),
                               StateBatch(5, 6, ARCHIVED, 1))


def test_delivery_limit_archives_released_records() -> None:
    sp = SharePartition(start_offset=0)
    for delivery in range(1, 4):
        assert acquire(sp, max_records=10) == (AcquiredRange(0, 9, delivery),)
        err, changes = ack(sp, "m1", (0, 4, [RELEASE]), (5, 9, [RELEASE]), limit=3)
        assert err is ErrorCode.none
    # the third release reached the limit: archived, and the start offset passes them
    assert changes == Changes((), 10, True)
    assert sp.start_offset == 10 and sp.in_flight_count() == 0
    # per offset: only the records at the limit are archived
    sp = SharePartition(start_offset=0)
    acquire(sp, max_records=10)
    ack(sp, "m1", (0, 4, [RELEASE]))
    acquire(sp, max_records=5, batches=[(0, 4), (5, 9)])
    err, changes = ack(sp, "m1", (0, 9, [RELEASE]), limit=2)
    assert changes.batches == (StateBatch(5, 9, AVAILABLE, 1),) and changes.start_offset == 5


def test_records_not_acquired_by_the_member_are_invalid_record_state() -> None:
    sp = SharePartition(start_offset=0)
    acquire(sp, "m1", max_records=10)
    acquire(sp, "m2", max_records=10)
    assert ack(sp, "m2", (5, 9, [ACCEPT]))[0] is ErrorCode.invalid_record_state
    assert ack(sp, "m1", (5, 14, [ACCEPT]))[0] is ErrorCode.invalid_record_state
    assert ack(sp, "m1", (0, 4, [ACCEPT]))[0] is ErrorCode.none
    ack(sp, "m2", (10, 11, [RELEASE]))
    assert ack(sp, "m1", (0, 4, [ACCEPT]))[0] is ErrorCode.none  # below the start: ignored
    assert ack(sp, "m1", (5, 5, [ACCEPT]), (5, 6, [ACCEPT]))[0] is (
        ErrorCode.invalid_record_state)  # the same offset twice
    assert ack(sp, "m2", (10, 10, [ACCEPT]))[0] is ErrorCode.invalid_record_state  # released
    unloaded = SharePartition(start_offset=0)
    assert ack(unloaded, "m1", (0, 0, [ACCEPT]))[0] is ErrorCode.invalid_record_state


@pytest.mark.parametrize("batches", [
    [(5, 4, [ACCEPT])],  # first > last
    [(5, 6, [ACCEPT]), (2, 3, [ACCEPT])],  # descending
    [(0, 3, [ACCEPT, ACCEPT])],  # neither one type nor one per offset
    [(0, 3, [])],  # no type
    [(0, 0, [RENEW])],  # v2 only
    [(0, 0, [5])],
    [(0, 0, [-1])],
    [(15, 25, [ACCEPT])],  # past the in-flight end
    [(25, 25, [ACCEPT])],
], ids=["first>last", "descending", "type-count", "no-type", "renew", "type-5", "type-neg",
        "last-past-end", "first-past-end"])
def test_malformed_acknowledgements_are_invalid_request(
        batches: list[tuple[int, int, list[int]]]) -> None:
    sp = SharePartition(start_offset=0)
    acquire(sp, max_records=20)
    err, changes = ack(sp, "m1", *batches)
    assert err is ErrorCode.invalid_request and not changes
    assert sp.acquired_count() == 20


def test_acknowledgement_is_all_or_nothing() -> None:
    sp = SharePartition(start_offset=0)
    acquire(sp, "m1", max_records=10)
    acquire(sp, "m2", max_records=10)
    before = states(sp, 0, 19)
    err, changes = ack(sp, "m1", (0, 4, [ACCEPT]), (5, 9, [RELEASE]), (10, 12, [ACCEPT]))
    assert err is ErrorCode.invalid_record_state and not changes
    assert states(sp, 0, 19) == before and sp.start_offset == 0


def test_start_offset_advances_past_the_terminal_head() -> None:
    sp = SharePartition(start_offset=0)
    acquire(sp, max_records=30)
    err, changes = ack(sp, "m1", (10, 19, [ACCEPT]))
    assert sp.start_offset == 0 and not changes.start_moved
    err, changes = ack(sp, "m1", (0, 9, [REJECT]))
    # the head and what follows it are terminal: the start offset passes both, and the
    # changes carry nothing below it
    assert changes == Changes((), 20, True)
    assert sp.start_offset == 20 and sp.in_flight_count() == 10
    err, changes = ack(sp, "m1", (15, 24, [ACCEPT, ACCEPT, ACCEPT, ACCEPT, ACCEPT,
                                           ACCEPT, RELEASE, ACCEPT, ACCEPT, ACCEPT]))
    assert err is ErrorCode.none  # 15-19 are below the start offset: skipped
    assert changes == Changes((StateBatch(21, 21, AVAILABLE, 1),
                               StateBatch(22, 24, ACKNOWLEDGED, 1)), 21, True)
    err, changes = ack(sp, "m1", (25, 29, [ACCEPT]))
    assert changes == Changes((StateBatch(25, 29, ACKNOWLEDGED, 1),), 21, False)
    assert sp.start_offset == 21 and sp.next_fetch_offset() == 21


# ------------------------------------------------------------------ locks and members


def test_expire_releases_what_the_acquisition_still_holds() -> None:
    sp = SharePartition(start_offset=0)
    first = sp.acquire("m1", log(), 10, 500, 2000, 0, LOCK_MS)
    second = sp.acquire("m1", log(), 10, 500, 2000, 5, LOCK_MS)
    assert first is not None and second is not None
    ack(sp, "m1", (3, 4, [ACCEPT]))
    assert not sp.expire(first.acquisition_id, LOCK_MS - 1, LIMIT)  # not yet
    changes = sp.expire(first.acquisition_id, LOCK_MS, LIMIT)
    assert changes == Changes((StateBatch(0, 2, AVAILABLE, 1), StateBatch(5, 9, AVAILABLE, 1)),
                              0, False)
    assert sp.expired_count == 8
    assert first.acquisition_id not in sp.acquisitions
    assert not sp.expire(first.acquisition_id, LOCK_MS, LIMIT)  # once
    assert states(sp, 10, 10) == [(ACQUIRED, 1, "m1")]  # the other acquisition holds on
    assert ack(sp, "m1", (0, 0, [ACCEPT]))[0] is ErrorCode.invalid_record_state
    # at the delivery limit the lock timeout archives
    changes = sp.expire(second.acquisition_id, 10**9, 1)
    assert changes == Changes((StateBatch(10, 19, ARCHIVED, 1),), 0, False)
    assert states(sp, 10, 10) == [(ARCHIVED, 1, None)]
    # an acquisition whose records were all acknowledged is gone
    third = sp.acquire("m1", log(), 10, 500, 2000, 0, LOCK_MS)
    assert third is not None
    assert third.ranges == (AcquiredRange(0, 2, 2), AcquiredRange(5, 9, 2),
                            AcquiredRange(20, 29, 1))
    assert ack(sp, "m1", (0, 2, [ACCEPT]), (5, 9, [ACCEPT]), (20, 29, [ACCEPT]))[0] is (
        ErrorCode.none)
    assert third.acquisition_id not in sp.acquisitions and sp.start_offset == 30


def test_release_member_releases_only_its_records_and_keeps_counts() -> None:
    sp = SharePartition(start_offset=0)
    acquire(sp, "m1", max_records=10)
    acquire(sp, "m2", max_records=10)
    acquire(sp, "m1", max_records=10)
    ack(sp, "m1", (0, 4, [ACCEPT]))
    changes = sp.release_member("m1", LIMIT)
    assert changes == Changes((StateBatch(5, 9, AVAILABLE, 1), StateBatch(20, 29, AVAILABLE, 1)),
                              5, False)
    assert sp.acquired_count() == 10 and states(sp, 10, 10) == [(ACQUIRED, 1, "m2")]
    assert not sp.release_member("m1", LIMIT)
    assert [a.member_id for a in sp.acquisitions.values()] == ["m2"]


def test_log_start_moving_past_the_start_offset_drops_what_is_below() -> None:
    sp = SharePartition(start_offset=0)
    acquire(sp, "m1", max_records=30)
    ack(sp, "m1", (20, 29, [RELEASE]))
    assert sp.log_start_moved(15) == Changes((), 15, True)
    assert sp.start_offset == 15 and sp.in_flight_count() == 15
    assert ack(sp, "m1", (10, 14, [ACCEPT]))[0] is ErrorCode.none  # below: ignored
    assert ack(sp, "m1", (10, 19, [ACCEPT]))[0] is ErrorCode.none
    assert sp.start_offset == 20
    assert not sp.log_start_moved(20)
    assert sp.log_start_moved(100) == Changes((), 100, True)
    assert sp.in_flight_count() == 0 and sp.next_fetch_offset() == 100
    assert not sp.acquisitions


# ------------------------------------------------------------------ loading


def test_load_snapshot_replaces_and_load_update_merges() -> None:
    sp = SharePartition()
    sp.load_snapshot(10, 3, 1, [StateBatch(10, 19, AVAILABLE, 1), StateBatch(25, 29, ARCHIVED, 2)])
    assert (sp.start_offset, sp.state_epoch, sp.snapshot_epoch) == (10, 3, 1)
    assert sp.updates_since_snapshot == 0 and sp.acquired_count() == 0
    assert sp.in_flight_count() == 20  # 20-24 are a gap
    # higher count wins, then the higher state; a lower count loses; -1 keeps the start
    sp.load_update(-1, [StateBatch(10, 12, ACKNOWLEDGED, 1), StateBatch(13, 14, AVAILABLE, 2),
                        StateBatch(15, 16, AVAILABLE, 0), StateBatch(25, 26, ACKNOWLEDGED, 2)])
    assert sp.updates_since_snapshot == 1 and sp.start_offset == 13
    assert sp.persisted_batches() == (
        StateBatch(13, 14, AVAILABLE, 2), StateBatch(15, 19, AVAILABLE, 1),
        StateBatch(25, 29, ARCHIVED, 2))
    # a start offset prunes what is below it; a lower one is ignored
    sp.load_update(16, [StateBatch(14, 17, ARCHIVED, 3), StateBatch(40, 41, ACKNOWLEDGED, 1)])
    sp.load_update(2, [])
    assert sp.start_offset == 18 and sp.updates_since_snapshot == 3
    assert sp.persisted_batches() == (
        StateBatch(18, 19, AVAILABLE, 1), StateBatch(25, 29, ARCHIVED, 2),
        StateBatch(40, 41, ACKNOWLEDGED, 1))
    sp.load_snapshot(0, 4, 2, [])
    assert sp.persisted_batches() == () and sp.in_flight_count() == 0
    assert sp.updates_since_snapshot == 0 and sp.state_epoch == 4


def test_after_a_reload_acquired_records_are_available_again() -> None:
    """What was ACQUIRED comes back AVAILABLE with its persisted count, or as a gap acquired
    again with count 1 if it was never written (Kafka §4.2)."""
    sp = SharePartition(start_offset=0)
    acquire(sp, max_records=30)
    _, released = ack(sp, "m1", (0, 9, [RELEASE]))
    _, accepted = ack(sp, "m1", (20, 24, [ACCEPT]))
    acquire(sp, "m2", max_records=10)  # 0-9 again, count 2
    assert sp.persisted_batches() == (StateBatch(0, 9, AVAILABLE, 1),
                                      StateBatch(20, 24, ACKNOWLEDGED, 1))
    reloaded = SharePartition()
    reloaded.load_snapshot(0, 0, 0, [])
    reloaded.load_update(released.start_offset, released.batches)
    reloaded.load_update(accepted.start_offset, accepted.batches)
    assert reloaded.acquired_count() == 0 and not reloaded.acquisitions
    assert reloaded.persisted_batches() == sp.persisted_batches()
    assert reloaded.next_fetch_offset() == 0
    # 0-9 persisted AVAILABLE (count 1), 10-19 a gap (never written), 20-24 acknowledged;
    # 25-29 were acquired and never written either: past the loaded end, they are new records
    assert reloaded.end_offset == 24
    assert acquire(reloaded, "m3") == (AcquiredRange(0, 9, 2), AcquiredRange(10, 19, 1),
                                       AcquiredRange(25, 509, 1))
    # the same from a snapshot of the live state
    snap = SharePartition()
    snap.load_snapshot(sp.start_offset, 0, 1, sp.persisted_batches())
    assert snap.persisted_batches() == sp.persisted_batches() and snap.acquired_count() == 0


def test_replaying_its_own_records_changes_nothing_live() -> None:
    """The runtime replays the record a change produced into the same partition: the update
    is already there, and a snapshot keeps the acquisitions it agrees with."""
    sp = SharePartition(start_offset=0)
    acquire(sp, "m1", max_records=30)
    _, changes = ack(sp, "m1", (5, 9, [RELEASE]), (10, 14, [ACCEPT]))
    acquire(sp, "m2", max_records=10)  # 5-9 again (count 2) and 30-39
    view = (sp.persisted_batches(), sp.start_offset, states(sp, 0, 39), dict(sp.acquisitions))
    sp.load_update(changes.start_offset, changes.batches)
    assert (sp.persisted_batches(), sp.start_offset, states(sp, 0, 39),
            dict(sp.acquisitions)) == view
    sp.load_snapshot(sp.start_offset, sp.state_epoch, 1, sp.persisted_batches())
    assert (sp.persisted_batches(), sp.start_offset, states(sp, 0, 39),
            dict(sp.acquisitions)) == view
    assert sp.updates_since_snapshot == 0 and sp.snapshot_epoch == 1
    # a snapshot that disagrees (another count) takes the record from its holder
    sp.load_snapshot(sp.start_offset, sp.state_epoch, 2,
                     [StateBatch(5, 5, AVAILABLE, 3), StateBatch(6, 9, AVAILABLE, 1),
                      *sp.persisted_batches()[1:]])
    assert states(sp, 5, 6) == [(AVAILABLE, 3, None), (ACQUIRED, 2, "m2")]
    # an update that wins over an acquired record's persisted view takes it too
    sp.load_update(-1, [StateBatch(6, 6, ARCHIVED, 2)])
    assert states(sp, 6, 7) == [(ARCHIVED, 2, None), (ACQUIRED, 2, "m2")]
    # a snapshot of another state epoch drops every acquisition
    sp.load_snapshot(sp.start_offset, sp.state_epoch + 1, 3, sp.persisted_batches())
    assert sp.acquired_count() == 0 and not sp.acquisitions


def test_persisted_view_of_acquired_records() -> None:
    sp = SharePartition(start_offset=0)
    acquire(sp, max_records=10)
    assert sp.persisted_batches() == ()  # acquired once, never written
    ack(sp, "m1", (0, 9, [RELEASE]))
    acquire(sp, max_records=10)
    assert sp.persisted_batches() == (StateBatch(0, 9, AVAILABLE, 1),)


# ------------------------------------------------------------------ random operations


def _check_invariants(sp: SharePartition) -> None:
    head = sp.state_of(sp.start_offset)
    assert head is None or head[0] not in (ACKNOWLEDGED, ARCHIVED)
    held: dict[int, int] = {}
    for o in range(sp.start_offset, sp.end_offset + 1):
        state = sp.state_of(o)
        assert state is not None
        if state[0] == ACQUIRED:
            assert state[2] is not None and state[1] >= 1
        else:
            assert state[2] is None
    owners = sp._owners  # the internal owner slots: each must be a live acquisition's
    for acq in sp.acquisitions.values():
        for r in acq.ranges:
            for o in range(max(r.first_offset, sp.start_offset), r.last_offset + 1):
                i = o - sp.start_offset
                if i < len(owners) and owners[i] == acq.acquisition_id:
                    state = sp.state_of(o)
                    assert state is not None and state[0] == ACQUIRED
                    assert state[2] == acq.member_id
                    held[acq.acquisition_id] = held.get(acq.acquisition_id, 0) + 1
    assert set(held) == set(sp.acquisitions) and sp._held == held
    assert sp.acquired_count() == sum(held.values())


@pytest.mark.slow
@settings(max_examples=150, deadline=None)
@given(st.data())
def test_random_operations_keep_invariants_and_reload_to_the_same_state(
        data: st.DataObject) -> None:
    """Whatever happens, a reload from the written Changes gives the persisted state the live
    partition shows, and replaying each Changes into the live partition changes nothing."""
    sp = SharePartition(start_offset=0)
    written: list[Changes] = []
    members = ["a", "b", "c"]
    now = 0
    limit = data.draw(st.integers(1, 4))

    def persist(changes: Changes) -> None:
        if changes:
            written.append(changes)
            before = (sp.persisted_batches(), sp.start_offset,
                      [sp.state_of(o) for o in range(sp.start_offset, sp.end_offset + 1)])
            sp.load_update(changes.start_offset, changes.batches)  # the runtime's replay
            assert (sp.persisted_batches(), sp.start_offset,
                    [sp.state_of(o) for o in range(sp.start_offset, sp.end_offset + 1)]) == before

    for _ in range(data.draw(st.integers(1, 25))):
        op = data.draw(st.sampled_from(["acquire", "ack", "expire", "release", "lso", "snap"]))
        now += data.draw(st.integers(0, 20_000))
        if op == "acquire":
            sp.acquire(data.draw(st.sampled_from(members)), log(0, 399, 5),
                       data.draw(st.integers(1, 40)), data.draw(st.integers(1, 30)),
                       data.draw(st.integers(1, 120)), now, LOCK_MS)
        elif op == "ack" and sp.acquisitions:
            acq = data.draw(st.sampled_from(sorted(sp.acquisitions.values(),
                                                   key=lambda a: a.acquisition_id)))
            r = data.draw(st.sampled_from(acq.ranges))
            first = data.draw(st.integers(r.first_offset, r.last_offset))
            last = data.draw(st.integers(first, r.last_offset))
            per_offset = data.draw(st.booleans())
            types = data.draw(st.lists(st.integers(0, 3), min_size=last - first + 1,
                                       max_size=last - first + 1)) if per_offset else [
                data.draw(st.integers(0, 3))]
            member = data.draw(st.sampled_from([acq.member_id, *members]))
            err, changes = sp.acknowledge(member, [(first, last, types)], limit)
            assert err in (ErrorCode.none, ErrorCode.invalid_record_state)
            assert err is ErrorCode.none or not changes
            persist(changes)
        elif op == "expire" and sp.acquisitions:
            aid = data.draw(st.sampled_from(sorted(sp.acquisitions)))
            persist(sp.expire(aid, now, limit))
        elif op == "release":
            persist(sp.release_member(data.draw(st.sampled_from(members)), limit))
        elif op == "lso":
            persist(sp.log_start_moved(sp.start_offset + data.draw(st.integers(0, 8))))
        elif op == "snap":
            before = [sp.state_of(o) for o in range(sp.start_offset, sp.end_offset + 1)]
            sp.load_snapshot(sp.start_offset, sp.state_epoch, sp.snapshot_epoch + 1,
                             sp.persisted_batches())
            assert [sp.state_of(o) for o in range(sp.start_offset, sp.end_offset + 1)] == before
        _check_invariants(sp)
    reloaded = SharePartition()
    reloaded.load_snapshot(0, 0, 0, [])
    for changes in written:
        reloaded.load_update(changes.start_offset, changes.batches)
    _check_invariants(reloaded)
    assert reloaded.acquired_count() == 0
    assert reloaded.persisted_batches() == sp.persisted_batches()
    assert reloaded.start_offset == sp.start_offset
    snapshot = SharePartition()
    snapshot.load_snapshot(sp.start_offset, 0, 1, sp.persisted_batches())
    assert snapshot.persisted_batches() == sp.persisted_batches()
