"""The member state machine (coordinator/groups/reconcile.py): every KIP-848 transition."""

from __future__ import annotations

import uuid

from coordinator.groups.consumer.model import ConsumerGroupMember, MemberState
from coordinator.groups.consumer.reconcile import reconcile

T = uuid.UUID(int=1)
U = uuid.UUID(int=2)
SUBSCRIBED = frozenset({T, U})


def fs(*parts: int) -> frozenset[int]:
    return frozenset(parts)


def free(topic: uuid.UUID, partition: int) -> int:
    return -1


def member(epoch: int = 5, assigned: dict | None = None, pending: dict | None = None,
           state: MemberState = MemberState.STABLE) -> ConsumerGroupMember:
    return ConsumerGroupMember("m", member_epoch=epoch, previous_member_epoch=epoch - 1,
                               state=state, assigned_partitions=assigned or {},
                               partitions_pending_revocation=pending or {})


def test_stable_and_reconciled_stays_as_is() -> None:
    m = member(assigned={T: fs(0, 1)})
    assert reconcile(m, 5, {T: fs(0, 1)}, free, None, SUBSCRIBED) is m


def test_stable_to_new_epoch_when_only_partitions_are_added() -> None:
    m = reconcile(member(assigned={T: fs(0)}), 6, {T: fs(0, 1)}, free, None, SUBSCRIBED)
    assert (m.state, m.member_epoch, m.previous_member_epoch) == (MemberState.STABLE, 6, 5)
    assert m.assigned_partitions == {T: fs(0, 1)}


def test_stable_to_unrevoked_keeps_the_epoch_and_revokes_first() -> None:
    m = reconcile(member(assigned={T: fs(0, 1)}), 6, {T: fs(0), U: fs(0)}, free, None,
                  SUBSCRIBED)
    assert (m.state, m.member_epoch) == (MemberState.UNREVOKED_PARTITIONS, 5)
    assert m.assigned_partitions == {T: fs(0)}
    assert m.partitions_pending_revocation == {T: fs(1)}


def test_unrevoked_waits_while_the_client_owns_a_revoked_partition() -> None:
    m = member(assigned={T: fs(0)}, pending={T: fs(1)}, state=MemberState.UNREVOKED_PARTITIONS)
    assert reconcile(m, 6, {T: fs(0), U: fs(0)}, free, [(T, [0, 1])], SUBSCRIBED) is m
    assert reconcile(m, 6, {T: fs(0), U: fs(0)}, free, None, SUBSCRIBED) is m  # unknown: owns


def test_unrevoked_to_stable_once_revoked_with_epoch_plus_one_then_target() -> None:
    m = member(assigned={T: fs(0)}, pending={T: fs(1)}, state=MemberState.UNREVOKED_PARTITIONS)
    after = reconcile(m, 6, {T: fs(0), U: fs(0)}, free, [(T, [0])], SUBSCRIBED)
    assert (after.state, after.member_epoch) == (MemberState.STABLE, 6)
    assert after.assigned_partitions == {T: fs(0), U: fs(0)}
    assert after.partitions_pending_revocation == {}


def test_unreleased_partitions_are_withheld_until_their_owner_releases_them() -> None:
    held = {(U, 0): 4}
    def epoch_of(topic: uuid.UUID, partition: int) -> int:
        return held.get((topic, partition), -1)
    m = reconcile(member(assigned={T: fs(0)}), 6, {T: fs(0), U: fs(0, 1)}, epoch_of, None,
                  SUBSCRIBED)
    assert (m.state, m.member_epoch) == (MemberState.UNRELEASED_PARTITIONS, 6)
    assert m.assigned_partitions == {T: fs(0), U: fs(1)}
    held.clear()
    m2 = reconcile(m, 6, {T: fs(0), U: fs(0, 1)}, epoch_of, None, SUBSCRIBED)
    assert (m2.state, m2.member_epoch) == (MemberState.STABLE, 6)
    assert m2.assigned_partitions == {T: fs(0), U: fs(0, 1)}


def test_unreleased_with_nothing_to_add_moves_to_the_target_epoch_and_waits() -> None:
    m = reconcile(member(assigned={}), 6, {T: fs(0)}, lambda t, p: 3, None, SUBSCRIBED)
    assert (m.state, m.member_epoch, m.assigned_partitions) == (
        MemberState.UNRELEASED_PARTITIONS, 6, {})


def test_no_revocation_needed_when_the_client_already_dropped_them() -> None:
    m = reconcile(member(assigned={T: fs(0, 1)}), 6, {T: fs(0)}, free, [(T, [0])], SUBSCRIBED)
    assert (m.state, m.member_epoch, m.assigned_partitions) == (MemberState.STABLE, 6,
                                                                {T: fs(0)})


def test_partitions_of_unsubscribed_topics_are_revoked_even_if_the_target_lags() -> None:
    m = member(assigned={T: fs(0), U: fs(0)})
    after = reconcile(m, 5, {T: fs(0), U: fs(0)}, free, None, frozenset({T}))
    assert after.state is MemberState.UNREVOKED_PARTITIONS
    assert after.partitions_pending_revocation == {U: fs(0)}
    assert after.assigned_partitions == {T: fs(0)}


def test_a_new_member_reconciles_from_epoch_zero_to_the_target() -> None:
    m = reconcile(ConsumerGroupMember("m"), 2, {T: fs(0, 1, 2)}, free, [], SUBSCRIBED)
    assert (m.state, m.member_epoch, m.previous_member_epoch) == (MemberState.STABLE, 2, 0)
