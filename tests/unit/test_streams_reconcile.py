"""Streams group reconciliation (coordinator/groups/streams/reconcile.py): Kafka 4.3's
``streams.CurrentAssignmentBuilder``, its worked trace and the unreleased-task rules."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from coordinator.groups.streams.model import (
    EMPTY_TASKS,
    GroupState,
    MemberState,
    StreamsGroup,
    StreamsGroupMember,
    Tasks,
    TasksTuple,
)
from coordinator.groups.streams.reconcile import is_owned_subset, reconcile
from coordinator.runtime import CoordinatorError
from protocol import ErrorCode

S1, S2 = "subtopology1", "subtopology2"


def tasks(**by_subtopology: list[int]) -> Tasks:
    return {s: frozenset(p) for s, p in by_subtopology.items() if p}


def active(epoch: int | dict[str, dict[int, int]] | None = None,
           **by_subtopology: list[int]) -> TasksTuple:
    """Active tasks, all at ``epoch`` (an int) or with explicit epochs (a dict); None: none
    (a target)."""
    t = tasks(**by_subtopology)
    if epoch is None:
        return TasksTuple(active=t)
    if isinstance(epoch, int):
        return TasksTuple(active=t, epochs={s: dict.fromkeys(p, epoch) for s, p in t.items()})
    return TasksTuple(active=t, epochs=epoch)


def owned(act: Tasks | None = None, stb: Tasks | None = None,
          wup: Tasks | None = None) -> TasksTuple:
    return TasksTuple(active=act or {}, standby=stb or {}, warmup=wup or {})


NOTHING = owned()


def member(member_id: str, epoch: int = 10, prev: int = 9, process: str = "p1",
           state: MemberState = MemberState.STABLE, assigned: TasksTuple | None = None,
           pending: TasksTuple | None = None) -> StreamsGroupMember:
    return StreamsGroupMember(member_id, member_epoch=epoch, previous_member_epoch=prev,
                              state=state, process_id=process,
                              assigned=assigned or TasksTuple(),
                              pending_revocation=pending or TasksTuple())


def group(*members: StreamsGroupMember, epoch: int = 11) -> StreamsGroup:
    g = StreamsGroup("g", group_epoch=epoch, assignment_epoch=epoch, validated_topology_epoch=0,
                     members={m.member_id: m for m in members})
    g.topology = SimpleNamespace(epoch=0)
    return g


def step(g: StreamsGroup, m: StreamsGroupMember | str, target: TasksTuple,
         own: TasksTuple | None, epoch: int = 11) -> StreamsGroupMember:
    """One heartbeat: reconcile against the stored group, then 'replay' the result into it."""
    current = g.members[m] if isinstance(m, str) else m
    after = reconcile(current, epoch, target, g, own)
    g.members[after.member_id] = after
    return after


def check(m: StreamsGroupMember, state: MemberState, epoch: int, prev: int,
          assigned: TasksTuple, pending: TasksTuple = EMPTY_TASKS) -> None:
    assert (m.state, m.member_epoch, m.previous_member_epoch) == (state, epoch, prev)
    assert m.assigned == assigned  # active task epochs included
    assert m.pending_revocation == pending


# --- the worked trace: GroupMetadataManagerTest.testStreamsReconciliationProcess --------------

def test_streams_reconciliation_process() -> None:
    a = member("A", assigned=active(10, subtopology1=[0, 1, 2], subtopology2=[0, 1]))
    b = member("B", assigned=active(10, subtopology1=[3, 4, 5], subtopology2=[2]))
    g = group(a, b)
    target = {"A": active(subtopology1=[0, 1], subtopology2=[0]),
              "B": active(subtopology1=[2, 3], subtopology2=[2]),
              "C": active(subtopology1=[4, 5], subtopology2=[1])}

    # C joins (epoch 0, empty lists): every task of its target is held by A or B.
    c = step(g, member("C", epoch=0, prev=0), target["C"], NOTHING)
    check(c, MemberState.UNRELEASED_TASKS, 11, 0, TasksTuple())
    assert g.state is GroupState.RECONCILING

    # A heartbeats at 10 without lists: it must revoke s1:2 and s2:1 first, staying at 10.
    a1 = step(g, "A", target["A"], None)
    check(a1, MemberState.UNREVOKED_TASKS, 10, 10,
          active(10, subtopology1=[0, 1], subtopology2=[0]),
          active(10, subtopology1=[2], subtopology2=[1]))

    # B likewise: revoke s1:4, s1:5.
    b1 = step(g, "B", target["B"], None)
    check(b1, MemberState.UNREVOKED_TASKS, 10, 10,
          active(10, subtopology1=[3], subtopology2=[2]), active(10, subtopology1=[4, 5]))

    # C heartbeats: nothing released yet; only the previous epoch changes (a record).
    c1 = step(g, "C", target["C"], None)
    assert c1 is not c
    check(c1, MemberState.UNRELEASED_TASKS, 11, 11, TasksTuple())

    # A acknowledges: STABLE at 11; its kept tasks keep assignment epoch 10.
    a2 = step(g, "A", target["A"], owned(tasks(subtopology1=[0, 1], subtopology2=[0])))
    check(a2, MemberState.STABLE, 11, 10, active(10, subtopology1=[0, 1], subtopology2=[0]))
    assert a2.assigned.same_tasks(a1.assigned)  # no task lists in the response

    # B heartbeats without lists: a no-op (same object, no record).
    assert step(g, "B", target["B"], None) is b1

    # C gets s2:1, freed by A, at epoch 11; s1:4, s1:5 are still B's.
    c2 = step(g, "C", target["C"], None)
    check(c2, MemberState.UNRELEASED_TASKS, 11, 11, active(11, subtopology2=[1]))

    # C again while B has not acknowledged: unchanged.
    assert step(g, "C", target["C"], None) is c2

    # B acknowledges: STABLE at 11 and gets s1:2 (freed by A) at epoch 11; s1:3, s2:2 keep 10.
    b2 = step(g, "B", target["B"], owned(tasks(subtopology1=[3], subtopology2=[2])))
    check(b2, MemberState.STABLE, 11, 10,
          active({S1: {2: 11, 3: 10}, S2: {2: 10}}, subtopology1=[2, 3], subtopology2=[2]))
    assert g.state is GroupState.RECONCILING

    # C acknowledges what it holds and gets the rest, all at epoch 11.
    c3 = step(g, "C", target["C"], owned(tasks(subtopology2=[1])))
    check(c3, MemberState.STABLE, 11, 11, active(11, subtopology1=[4, 5], subtopology2=[1]))
    assert g.state is GroupState.STABLE

    # Reconciled: further heartbeats change nothing.
    for mid in "ABC":
        m = g.members[mid]
        assert reconcile(m, 11, target[mid], g, None) is m


# --- state by state -----------------------------------------------------------------------------

def test_stable_at_the_target_epoch_is_returned_as_is_even_if_the_target_differs() -> None:
    m = member("m", epoch=11, assigned=active(11, subtopology1=[0]))
    g = group(m)
    assert reconcile(m, 11, active(subtopology1=[0, 1]), g, None) is m
    assert reconcile(m, 11, active(subtopology1=[0]), g, NOTHING) is m


def test_stable_to_stable_with_new_tasks_at_target_epoch() -> None:
    m = member("m", assigned=active(10, subtopology1=[0]))
    after = reconcile(m, 11, active(subtopology1=[0, 1], subtopology2=[0]), group(m), None)
    check(after, MemberState.STABLE, 11, 10,
          active({S1: {0: 10, 1: 11}, S2: {0: 11}}, subtopology1=[0, 1], subtopology2=[0]))


def test_stable_epoch_bump_with_the_same_tasks_keeps_their_epochs() -> None:
    m = member("m", assigned=active({S1: {1: 5, 2: 6}}, subtopology1=[1, 2]))
    after = reconcile(m, 11, active(subtopology1=[1, 2]), group(m), None)
    check(after, MemberState.STABLE, 11, 10, active({S1: {1: 5, 2: 6}}, subtopology1=[1, 2]))


def test_missing_task_epochs_read_as_the_member_epoch() -> None:
    # A record without assignment epochs: Kafka loads them as the record's member epoch.
    m = member("m", assigned=TasksTuple(active=tasks(subtopology1=[0, 1])))
    after = reconcile(m, 11, active(subtopology1=[0]), group(m), owned())
    check(after, MemberState.STABLE, 11, 10, active(10, subtopology1=[0]))


def test_revocation_is_skipped_when_owned_lists_do_not_hold_the_revoked_tasks() -> None:
    # testStableToUnreleasedTasksWithOwnedTasksNotHavingRevokedTasks: owned known and
    # disjoint from the revocations, so the member moves on at once.
    m = member("m", assigned=active(10, subtopology1=[0, 1]))
    after = reconcile(m, 11, active(subtopology1=[0]), group(m), owned(tasks(subtopology1=[0])))
    check(after, MemberState.STABLE, 11, 10, active(10, subtopology1=[0]))


def test_owned_lists_are_compared_role_by_role() -> None:
    # The revoked task is active; owning it as standby does not hold the revocation up.
    m = member("m", assigned=active(10, subtopology1=[0, 1]))
    after = reconcile(m, 11, active(subtopology1=[0]), group(m),
                      owned(tasks(subtopology1=[0]), stb=tasks(subtopology1=[1])))
    assert after.state is MemberState.STABLE
    held = reconcile(m, 11, active(subtopology1=[0]), group(m),
                     owned(tasks(subtopology1=[0, 1])))
    assert held.state is MemberState.UNREVOKED_TASKS


def test_unrevoked_waits_while_owned_unknown_or_still_holding_a_pending_task() -> None:
    m = member("m", epoch=10, prev=10, state=MemberState.UNREVOKED_TASKS,
               assigned=TasksTuple(standby=tasks(subtopology1=[2, 3])),
               pending=TasksTuple(standby=tasks(subtopology1=[1])))
    g = group(m)
    target = TasksTuple(standby=tasks(subtopology1=[3]))
    assert reconcile(m, 12, target, g, None) is m
    assert reconcile(m, 12, target, g, owned(stb=tasks(subtopology1=[1, 2, 3]))) is m
    assert reconcile(m, 12, target, g, owned(stb=tasks(subtopology1=[2, 3]))) is not m


def test_unrevoked_to_unrevoked_at_epoch_plus_one_when_the_target_moved_on() -> None:
    # testUnrevokedTasksToUnrevokedTasks: after the acknowledgement a newer target needs more
    # revocations; the member takes epoch + 1 (not the target epoch) and revokes again.
    m = member("m", epoch=10, prev=10, state=MemberState.UNREVOKED_TASKS,
               assigned=active(10, subtopology1=[2, 3], subtopology2=[5, 6]),
               pending=active(10, subtopology1=[1], subtopology2=[4]))
    after = reconcile(m, 12, active(subtopology1=[3], subtopology2=[6]), group(m),
                      owned(tasks(subtopology1=[2, 3], subtopology2=[5, 6])))
    check(after, MemberState.UNREVOKED_TASKS, 11, 10,
          active(10, subtopology1=[3], subtopology2=[6]),
          active(10, subtopology1=[2], subtopology2=[5]))


def test_unrevoked_to_stable_after_acknowledgement() -> None:
    m = member("m", epoch=10, prev=10, state=MemberState.UNREVOKED_TASKS,
               assigned=active(10, subtopology1=[2, 3]), pending=active(10, subtopology1=[1]))
    after = reconcile(m, 11, active(subtopology1=[2, 3]), group(m),
                      owned(tasks(subtopology1=[2, 3])))
    check(after, MemberState.STABLE, 11, 10, active(10, subtopology1=[2, 3]))


def test_unreleased_to_unrevoked_when_the_new_target_takes_tasks_away() -> None:
    # testUnreleasedTasksToUnrevokedTasks: the epoch stays (11), previous becomes 11.
    m = member("m", epoch=11, prev=11, state=MemberState.UNRELEASED_TASKS,
               assigned=active(11, subtopology1=[2, 3], subtopology2=[5, 6]))
    after = reconcile(m, 12, active(subtopology1=[3], subtopology2=[6]), group(m), None)
    check(after, MemberState.UNREVOKED_TASKS, 11, 11,
          active(11, subtopology1=[3], subtopology2=[6]),
          active(11, subtopology1=[2], subtopology2=[5]))


def test_warmup_tasks_are_revoked_and_given_like_the_others() -> None:
    m = member("m", assigned=TasksTuple(warmup=tasks(subtopology1=[0, 1])))
    g = group(m)
    target = TasksTuple(warmup=tasks(subtopology1=[1, 2]))
    first = step(g, m, target, None)
    check(first, MemberState.UNREVOKED_TASKS, 10, 10, TasksTuple(warmup=tasks(subtopology1=[1])),
          TasksTuple(warmup=tasks(subtopology1=[0])))
    second = step(g, first, target, owned(wup=tasks(subtopology1=[1])))
    check(second, MemberState.STABLE, 11, 10, TasksTuple(warmup=tasks(subtopology1=[1, 2])))


# --- UNKNOWN -------------------------------------------------------------------------------------

def test_unknown_state_fences_unless_the_member_owns_nothing() -> None:
    m = member("m", epoch=11, prev=11, state=MemberState.UNKNOWN,
               assigned=active(11, subtopology1=[3], subtopology2=[6]),
               pending=active(11, subtopology1=[2], subtopology2=[5]))
    g = group(m)
    target = active(subtopology1=[3], subtopology2=[6])
    for own in (None, owned(tasks(subtopology1=[3])), owned(stb=tasks(subtopology1=[9]))):
        with pytest.raises(CoordinatorError) as err:
            reconcile(m, 12, target, g, own)
        assert err.value.code is ErrorCode.fenced_member_epoch
        assert err.value.message == ("The streams group member is in a unknown state. "
                                     "The member must abandon all its tasks and rejoin.")
    # It rejoined owning nothing: straight to the target epoch, tasks kept with their epochs.
    after = reconcile(m, 12, target, g, NOTHING)
    check(after, MemberState.STABLE, 12, 11, active(11, subtopology1=[3], subtopology2=[6]))


# --- unreleased tasks ----------------------------------------------------------------------------

def test_active_task_of_another_member_is_given_only_once_released() -> None:
    # W (another process) is revoking s1:0; V's target holds s1:0 and s1:1.
    w = member("W", process="p2", epoch=10, prev=10, state=MemberState.UNREVOKED_TASKS,
               assigned=active(10, subtopology1=[5]), pending=active(10, subtopology1=[0]))
    v = member("V", epoch=10, prev=10)
    g = group(w, v)
    target = active(subtopology1=[0, 1])
    v1 = step(g, "V", target, None)
    check(v1, MemberState.UNRELEASED_TASKS, 11, 10, active(11, subtopology1=[1]))
    v2 = step(g, "V", target, None)  # still held by W: only the previous epoch moves
    check(v2, MemberState.UNRELEASED_TASKS, 11, 11, active(11, subtopology1=[1]))
    assert step(g, "V", target, None) is v2
    # W's acknowledgement is replayed: s1:0 is free.
    step(g, "W", active(subtopology1=[5]), owned(tasks(subtopology1=[5])))
    assert g.members["W"].pending_revocation.is_empty()
    v3 = step(g, "V", target, owned(tasks(subtopology1=[1])))
    check(v3, MemberState.STABLE, 11, 11, active(11, subtopology1=[0, 1]))


def test_active_task_held_active_anywhere_is_unreleased_even_on_the_same_process() -> None:
    holder = member("H", process="p1", assigned=active(10, subtopology1=[0]))
    m = member("m", process="p1")
    after = reconcile(m, 11, active(subtopology1=[0]), group(holder, m), None)
    check(after, MemberState.UNRELEASED_TASKS, 11, 10, TasksTuple())


def test_standby_on_another_process_does_not_hold_an_active_task_up() -> None:
    other = member("O", process="p2", assigned=TasksTuple(standby=tasks(subtopology1=[0])))
    m = member("m", process="p1")
    after = reconcile(m, 11, active(subtopology1=[0]), group(other, m), None)
    check(after, MemberState.STABLE, 11, 10, active(11, subtopology1=[0]))


def test_standby_to_active_promotion_on_the_same_member_revokes_the_standby_first() -> None:
    m = member("m", assigned=TasksTuple(standby=tasks(subtopology1=[0])))
    g = group(m)
    target = active(subtopology1=[0])
    # 1. The standby must go first; the active task is withheld meanwhile.
    m1 = step(g, m, target, None)
    check(m1, MemberState.UNREVOKED_TASKS, 10, 10, TasksTuple(),
          TasksTuple(standby=tasks(subtopology1=[0])))
    # 2. Acknowledged; the stored record still lists the standby (pending revocation), so the
    #    active task is still unreleased: target epoch, UNRELEASED_TASKS, nothing assigned.
    m2 = step(g, m1, target, NOTHING)
    check(m2, MemberState.UNRELEASED_TASKS, 11, 10, TasksTuple())
    # 3. That record replayed: the active task is given, at the target epoch.
    m3 = step(g, m2, target, NOTHING)
    check(m3, MemberState.STABLE, 11, 11, active(11, subtopology1=[0]))


def test_standby_to_active_promotion_across_members_of_the_same_process() -> None:
    # X (p1) holds s1:0 as standby and must give it up; Z (p1) is to run it active.
    x = member("X", process="p1", assigned=TasksTuple(standby=tasks(subtopology1=[0])))
    z = member("Z", process="p1")
    g = group(x, z)
    z1 = step(g, "Z", active(subtopology1=[0]), None)
    check(z1, MemberState.UNRELEASED_TASKS, 11, 10, TasksTuple())
    x1 = step(g, "X", TasksTuple(), None)
    assert x1.state is MemberState.UNREVOKED_TASKS  # still holds the standby (pending)
    z2 = step(g, "Z", active(subtopology1=[0]), NOTHING)
    check(z2, MemberState.UNRELEASED_TASKS, 11, 11, TasksTuple())
    x2 = step(g, "X", TasksTuple(), NOTHING)
    check(x2, MemberState.STABLE, 11, 10, TasksTuple())
    z3 = step(g, "Z", active(subtopology1=[0]), NOTHING)
    check(z3, MemberState.STABLE, 11, 11, active(11, subtopology1=[0]))


def test_standby_is_unreleased_while_its_process_holds_the_task_in_any_role() -> None:
    target = TasksTuple(standby=tasks(subtopology1=[0]))
    for held in (active(10, subtopology1=[0]), TasksTuple(standby=tasks(subtopology1=[0])),
                 TasksTuple(warmup=tasks(subtopology1=[0]))):
        same = member("S", process="p1", assigned=held)
        after = reconcile(member("m", process="p1"), 11, target, group(same), None)
        check(after, MemberState.UNRELEASED_TASKS, 11, 10, TasksTuple())
        # The same holdings on another process do not matter to a standby.
        elsewhere = member("S", process="p2", assigned=held)
        after = reconcile(member("m", process="p1"), 11, target, group(elsewhere), None)
        check(after, MemberState.STABLE, 11, 10, target)


def test_warmup_is_unreleased_while_its_process_holds_the_task_pending_revocation() -> None:
    same = member("S", process="p1", state=MemberState.UNREVOKED_TASKS,
                  pending=TasksTuple(standby=tasks(subtopology1=[0])))
    target = TasksTuple(warmup=tasks(subtopology1=[0], subtopology2=[1]))
    after = reconcile(member("m", process="p1"), 11, target, group(same), None)
    check(after, MemberState.UNRELEASED_TASKS, 11, 10,
          TasksTuple(warmup=tasks(subtopology2=[1])))


def test_active_to_standby_demotion_on_the_same_member_waits_for_the_active_record() -> None:
    m = member("m", assigned=active(10, subtopology1=[0]))
    g = group(m)
    target = TasksTuple(standby=tasks(subtopology1=[0]))
    m1 = step(g, m, target, None)
    check(m1, MemberState.UNREVOKED_TASKS, 10, 10, TasksTuple(), active(10, subtopology1=[0]))
    m2 = step(g, m1, target, NOTHING)
    check(m2, MemberState.UNRELEASED_TASKS, 11, 10, TasksTuple())
    m3 = step(g, m2, target, NOTHING)
    check(m3, MemberState.STABLE, 11, 11, target)


def test_a_task_just_revoked_by_the_member_comes_back_on_the_next_heartbeat() -> None:
    # The member acknowledged revoking s1:1 while the target (epoch 12) gives it back: its
    # stored record still lists s1:1 as pending revocation, so it is unreleased this time.
    m = member("m", epoch=11, prev=11, state=MemberState.UNREVOKED_TASKS,
               assigned=active(11, subtopology1=[0]), pending=active(11, subtopology1=[1]))
    g = group(m, epoch=12)
    target = active(subtopology1=[0, 1])
    m1 = step(g, m, target, owned(tasks(subtopology1=[0])), epoch=12)
    check(m1, MemberState.UNRELEASED_TASKS, 12, 11, active(11, subtopology1=[0]))
    m2 = step(g, m1, target, owned(tasks(subtopology1=[0])), epoch=12)
    check(m2, MemberState.STABLE, 12, 12, active({S1: {0: 11, 1: 12}}, subtopology1=[0, 1]))


# --- the epoch check of a request one epoch behind ---------------------------------------------

def test_is_owned_subset() -> None:
    assigned = TasksTuple(active=tasks(subtopology1=[0, 1]), standby=tasks(subtopology2=[0]),
                          warmup=tasks(subtopology2=[1]))
    assert not is_owned_subset(None, assigned)
    assert is_owned_subset(NOTHING, assigned)
    assert is_owned_subset(owned(tasks(subtopology1=[1]), tasks(subtopology2=[0]),
                                 tasks(subtopology2=[1])), assigned)
    assert not is_owned_subset(owned(tasks(subtopology1=[2])), assigned)
    assert not is_owned_subset(owned(tasks(subtopology2=[0])), assigned)  # role matters
    assert not is_owned_subset(owned(stb=tasks(subtopology1=[0])), assigned)
    assert not is_owned_subset(owned(wup=tasks(subtopology2=[0])), assigned)
    # Kafka: a listed subtopology the member has no tasks of fails, even with no partitions.
    assert not is_owned_subset(owned({"subtopology9": frozenset()}), assigned)
    assert is_owned_subset(owned({S1: frozenset()}), assigned)
