"""The streams groups' ``sticky`` task assignor (KIP-1071, Kafka 4.3's ``StickyTaskAssignor``).

Three layers:

* Kafka's ``StickyTaskAssignorTest`` scenarios, in our API and words (their assertions; where
  Kafka allows several outcomes, so do we);
* the worked examples of the streams spec (exact placements, ties broken by process id then
  member id);
* hypothesis properties, and a differential check against :func:`reference_assign`, a slow
  line-by-line model of Kafka's algorithm written for this test (dicts and ``min`` instead of
  heaps and dense indexes), with our deterministic tie-breaks.
"""

from __future__ import annotations

import logging
import math
import pickle
import random
from collections import defaultdict
from collections.abc import Iterable, Mapping, Sequence

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from assignors import (
    DEFAULT_TASK_ASSIGNOR,
    TASK_ASSIGNORS,
    StickyTaskAssignor,
    SubtopologyTasks,
    TaskAssignment,
    TaskAssignmentSpec,
    TaskAssignmentSpecError,
    TaskMember,
    UnknownAssignorError,
    get_task_assignor,
)

from .assignor_checks import BOOLEANS, integers, lists_of, sampled

ASSIGNOR = StickyTaskAssignor()
PROPS = settings(max_examples=200, deadline=None,
                 suppress_health_check=[HealthCheck.too_slow])

Task = tuple[str, int]
Roles = dict[str, tuple[dict[str, frozenset[int]], dict[str, frozenset[int]]]]
"""member id -> (active, standby) as in the assignor's output."""


# -- helpers ------------------------------------------------------------------------------

def tasks_map(pairs: Mapping[str, Iterable[int]] | None) -> dict[str, frozenset[int]]:
    return {s: frozenset(p) for s, p in (pairs or {}).items()}


def member(member_id: str, process_id: str, active: Mapping[str, Iterable[int]] | None = None,
           standby: Mapping[str, Iterable[int]] | None = None) -> TaskMember:
    return TaskMember(member_id, process_id, tasks_map(active), tasks_map(standby))


def topology(num_tasks: int, stateful: bool, *ids: str) -> tuple[SubtopologyTasks, ...]:
    return tuple(SubtopologyTasks(s, num_tasks, stateful) for s in ids)


def assign(members: Sequence[TaskMember], subs: Sequence[SubtopologyTasks],
           standby: int = 0) -> TaskAssignment:
    return ASSIGNOR.assign(TaskAssignmentSpec(tuple(members), tuple(subs), standby))


def flat(tasks: Mapping[str, Iterable[int]]) -> set[Task]:
    return {(s, p) for s, parts in tasks.items() for p in parts}


def active(result: TaskAssignment, *member_ids: str) -> set[Task]:
    return set().union(*(flat(result.member(m).active) for m in member_ids))


def standby(result: TaskAssignment, *member_ids: str) -> set[Task]:
    return set().union(*(flat(result.member(m).standby) for m in member_ids))


def parts(result: TaskAssignment, member_id: str, sub: str, role: str = "active") -> set[int]:
    return set(getattr(result.member(member_id), role).get(sub, ()))


def n_active(result: TaskAssignment, *member_ids: str) -> int:
    return sum(len(flat(result.member(m).active)) for m in member_ids)


def all_tasks(subs: Sequence[SubtopologyTasks], stateful_only: bool = False) -> set[Task]:
    return {(s.subtopology_id, p) for s in subs if s.stateful or not stateful_only
            for p in range(s.num_tasks)}


def roles(result: TaskAssignment) -> Roles:
    return {m: (dict(a.active), dict(a.standby)) for m, a in result.members.items()}


# -- a slow model of Kafka's algorithm ------------------------------------------------------

def java_key(s: str) -> bytes:
    """Java ``String.compareTo`` order (UTF-16 code units)."""
    return s.encode("utf-16-be", "surrogatepass")


def reference_assign(spec: TaskAssignmentSpec) -> Roles:
    """Kafka 4.3's ``StickyTaskAssignor.assign`` step by step, ties broken by (load, process
    id) for processes, (task count, member id) for members, member-id order for previous
    owners (the last one wins for a duplicated previous active task)."""
    members = sorted(spec.members, key=lambda m: m.member_id)
    if not members:
        return {}
    subs = sorted(spec.subtopologies, key=lambda s: java_key(s.subtopology_id))
    size = {s.subtopology_id: s.num_tasks for s in subs}
    replicas = spec.num_standby_replicas
    process_of = {m.member_id: m.process_id for m in members}
    process_members: dict[str, list[str]] = defaultdict(list)
    for m in members:
        process_members[m.process_id].append(m.member_id)
    count = {m.member_id: 0 for m in members}
    process_tasks = dict.fromkeys(process_members, 0)
    held: dict[str, set[Task]] = {p: set() for p in process_members}
    out_active: dict[str, set[Task]] = {m.member_id: set() for m in members}
    out_standby: dict[str, set[Task]] = {m.member_id: set() for m in members}

    def valid(sub: str, p: int) -> bool:
        return sub in size and 0 <= p < size[sub]

    prev_active: dict[Task, str] = {}
    prev_standby: dict[Task, list[str]] = defaultdict(list)
    for m in members:
        for sub, ps in m.active.items():
            for p in sorted(ps):
                if valid(sub, p):
                    prev_active[sub, p] = m.member_id
        for sub, ps in m.standby.items():
            for p in sorted(ps):
                if valid(sub, p):
                    prev_standby[sub, p].append(m.member_id)

    active_tasks = [(s.subtopology_id, p) for s in subs for p in range(s.num_tasks)]
    stateful_tasks = [(s.subtopology_id, p) for s in subs if s.stateful
                      for p in range(s.num_tasks)]
    quota = {"active": [0, len(members), len(active_tasks)],  # [per member, members, tasks]
             "total": [0, len(members), len(active_tasks) + len(stateful_tasks) * replicas]}

    def per_member(tasks: int, n: int) -> int:
        return 0 if n == 0 else -(-tasks // n)

    for q in quota.values():
        q[0] = per_member(q[2], q[1])

    def note(kind: str, c: int) -> None:
        q = quota[kind]
        if c == q[0]:
            q[1] -= 1
            q[2] -= c
            q[0] = per_member(q[2], q[1])

    def load(process: str) -> float:
        return process_tasks[process] / len(process_members[process])

    def add(m: str, task: Task, is_active: bool) -> int:
        p = process_of[m]
        count[m] += 1
        process_tasks[p] += 1
        held[p].add(task)
        (out_active if is_active else out_standby)[m].add(task)
        return count[m]

    def least_member(process: str) -> str:
        return min(process_members[process], key=lambda m: (count[m], m))

    def prev_with_least_load(candidates: list[str], task: Task | None) -> str | None:
        best = None
        for m in candidates:
            if task is not None and task in held[process_of[m]]:
                continue
            if best is None or (load(process_of[m]) < load(process_of[best])
                                and count[m] < count[best]):
                best = m
        return best

    # active tasks
    by_partition = sorted(active_tasks, key=lambda t: (t[1], java_key(t[0])))
    rest = []
    for task in by_partition:
        owner = prev_active.get(task)
        if owner is not None and count[owner] < quota["active"][0]:
            c = add(owner, task, True)
            note("active", c)
            note("total", c)
        else:
            rest.append(task)
    rest2 = []
    for task in rest:
        owner = prev_with_least_load(prev_standby.get(task, []), None)
        if owner is not None and count[owner] < quota["active"][0]:
            c = add(owner, task, True)
            note("active", c)
            note("total", c)
        else:
            rest2.append(task)
    for task in sorted(rest2, key=lambda t: (java_key(t[0]), t[1])):
        process = min(process_members, key=lambda p: (load(p), p))
        c = add(least_member(process), task, True)
        note("active", c)
        note("total", c)

    # standby tasks
    if replicas > 0:
        queued: list[tuple[Task, int]] = []
        for task in sorted(stateful_tasks, key=lambda t: (t[1], java_key(t[0])), reverse=True):
            for i in range(replicas):
                owner = prev_active.get(task)
                if (owner is not None and task not in held[process_of[owner]]
                        and count[owner] < quota["total"][0]):
                    note("total", add(owner, task, False))
                    continue
                owner = prev_with_least_load(prev_standby.get(task, []), task)
                if owner is not None and count[owner] < quota["total"][0]:
                    note("total", add(owner, task, False))
                    continue
                queued.append((task, replicas - i))
                break
        queued.sort(key=lambda e: (java_key(e[0][0]), e[0][1]), reverse=True)
        for task, remaining in queued:
            for _ in range(remaining):
                free = [p for p in process_members if task not in held[p]]
                if not free:
                    break
                process = min(free, key=lambda p: (load(p), p))
                note("total", add(least_member(process), task, False))

    def grouped(tasks: set[Task]) -> dict[str, frozenset[int]]:
        out: dict[str, set[int]] = defaultdict(set)
        for s, p in tasks:
            out[s].add(p)
        return {s: frozenset(out[s]) for s in sorted(out, key=java_key)}

    return {m.member_id: (grouped(out_active[m.member_id]), grouped(out_standby[m.member_id]))
            for m in members}


# -- Kafka's StickyTaskAssignorTest, in our words -------------------------------------------

def test_name_and_registry() -> None:
    assert ASSIGNOR.name == "sticky" == DEFAULT_TASK_ASSIGNOR
    assert set(TASK_ASSIGNORS) == {"sticky"}
    assert isinstance(get_task_assignor("sticky"), StickyTaskAssignor)
    assert isinstance(pickle.loads(pickle.dumps(ASSIGNOR)), StickyTaskAssignor)
    with pytest.raises(UnknownAssignorError):
        get_task_assignor("uniform")


def test_one_active_task_per_process_when_as_many_tasks_as_processes() -> None:
    subs = topology(3, False, "sub")
    result = assign([member(f"m{i}", f"p{i}") for i in (1, 2, 3)], subs)
    assert len(result.members) == 3
    for i in (1, 2, 3):
        assert len(result.member(f"m{i}").active) == 1
    assert active(result, "m1", "m2", "m3") == all_tasks(subs)


@pytest.mark.parametrize("stateful,replicas", [(False, 0), (True, 1)])
def test_two_subtopologies_spread_evenly_over_threads(stateful: bool, replicas: int) -> None:
    subs = topology(3, stateful, "sub1", "sub2")
    ids = [f"m{p}_{t}" for p in (1, 2, 3) for t in (1, 2)]
    result = assign([member(m, f"p{m[1]}") for m in ids], subs, replicas)
    for m in ids:
        assert n_active(result, m) == 1
    assert active(result, *ids) == all_tasks(subs)


def test_active_task_does_not_migrate_to_another_process() -> None:
    subs = topology(3, False, "sub")
    result = assign([member("m1", "p1", {"sub": [0]}), member("m2", "p2", {"sub": [1]})], subs)
    assert 0 in parts(result, "m1", "sub") and 1 in parts(result, "m2", "sub")
    assert n_active(result, "m1", "m2") == 3
    # the previous owner of 0 is gone; a new member of p1 had 2
    result = assign([member("m2", "p2", {"sub": [1]}), member("m3", "p1", {"sub": [2]})], subs)
    assert 1 in parts(result, "m2", "sub") and 2 in parts(result, "m3", "sub")
    assert n_active(result, "m2", "m3") == 3


def test_new_process_takes_tasks_without_reshuffling() -> None:
    subs = topology(3, False, "sub")
    result = assign([member("m1", "p1", {"sub": [0, 2]}), member("m2", "p2", {"sub": [1]}),
                     member("m3", "p3")], subs)
    assert parts(result, "m1", "sub") & {0, 2}
    assert parts(result, "m2", "sub") == {1}
    assert parts(result, "m3", "sub") & {0, 2}
    assert n_active(result, "m1", "m2", "m3") == 3


def test_tasks_by_capacity() -> None:
    subs = topology(3, False, "sub")
    result = assign([member("m1", "p1"), member("m2_1", "p2"), member("m2_2", "p2")], subs)
    for m in ("m1", "m2_1", "m2_2"):
        assert n_active(result, m) == 1


def test_unequal_subtopology_sizes_balance_by_count() -> None:
    subs = (SubtopologyTasks("sub1", 6, False), SubtopologyTasks("sub2", 1, False))
    previous = {"sub1": range(6), "sub2": [0]}
    result = assign([member("m1", "p1", previous), member("m2", "p2")], subs)
    assert n_active(result, "m1") == 4
    assert n_active(result, "m2") == 3
    assert active(result, "m1", "m2") == all_tasks(subs)


def test_stickiness_with_more_members_than_tasks() -> None:
    subs = topology(3, False, "sub")
    result = assign([member("m1", "p1", {"sub": [0]}), member("m2", "p2", {"sub": [2]}),
                     member("m3", "p3", {"sub": [1]}), member("m4", "p4"),
                     member("m5", "p5")], subs)
    assert parts(result, "m1", "sub") == {0}
    assert parts(result, "m2", "sub") == {2}
    assert parts(result, "m3", "sub") == {1}
    assert result.member("m4").active == {} and result.member("m5").active == {}
    # moved around: still sticky to whoever had them
    result = assign([member("m1", "p1"), member("m2", "p2", {"sub": [0]}), member("m3", "p3"),
                     member("m4", "p4", {"sub": [2]}), member("m5", "p5", {"sub": [1]})], subs)
    assert result.member("m1").active == {} and result.member("m3").active == {}
    assert parts(result, "m2", "sub") == {0}
    assert parts(result, "m4", "sub") == {2}
    assert parts(result, "m5", "sub") == {1}


def test_previous_standby_member_becomes_active() -> None:
    subs = topology(3, False, "sub")
    result = assign([member("m1", "p1", None, {"sub": [2]}),
                     member("m2", "p2", None, {"sub": [1]}),
                     member("m3", "p3", None, {"sub": [0]})], subs)
    assert parts(result, "m1", "sub") == {2}
    assert parts(result, "m2", "sub") == {1}
    assert parts(result, "m3", "sub") == {0}


def test_previous_standby_promoted_and_the_other_one_gets_the_standby() -> None:
    subs = topology(2, True, "sub")
    result = assign([member("m1", "p1", None, {"sub": [0]}),
                     member("m2", "p2", None, {"sub": [1]})], subs, 1)
    assert parts(result, "m1", "sub") == {0} and parts(result, "m1", "sub", "standby") == {1}
    assert parts(result, "m2", "sub") == {1} and parts(result, "m2", "sub", "standby") == {0}


def test_previous_standby_promotion_respects_capacity() -> None:
    subs = topology(3, False, "sub")
    result = assign([member("m1", "p1", {"sub": [0]}, {"sub": [1]}),
                     member("m2_1", "p2", {"sub": [2]}, {"sub": [1]}),
                     member("m2_2", "p2")], subs)
    assert parts(result, "m1", "sub") == {0}
    assert parts(result, "m2_1", "sub") == {2}
    assert parts(result, "m2_2", "sub") == {1}


def test_standby_never_with_its_active() -> None:
    subs = topology(4, True, "sub")
    result = assign([member(f"m{i + 1}", f"p{i + 1}", {"sub": [i]}) for i in range(4)], subs, 1)
    holders = 0
    for i in range(4):
        mine = parts(result, f"m{i + 1}", "sub", "standby")
        assert i not in mine
        assert len(mine) <= 2
        holders += bool(mine)
    assert holders >= 3
    assert standby(result, "m1", "m2", "m3", "m4") == all_tasks(subs)


def test_two_standby_replicas() -> None:
    subs = topology(3, True, "sub")
    result = assign([member(f"m{i + 1}", f"p{i + 1}", {"sub": [i]}) for i in range(3)], subs, 2)
    assert parts(result, "m1", "sub", "standby") == {1, 2}
    assert parts(result, "m2", "sub", "standby") == {0, 2}
    assert parts(result, "m3", "sub", "standby") == {0, 1}


def test_no_standby_without_another_process(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="assignors.sticky_task"):
        result = assign([member("m1", "p1")], topology(1, True, "sub"), 1)
    assert result.member("m1").standby == {}
    assert parts(result, "m1", "sub") == {0}
    assert [r.getMessage() for r in caplog.records] == [
        "Unable to assign 1 of 1 standby tasks for task [sub_0]. There is not enough "
        "available capacity. You should increase the number of threads and/or application "
        "instances to maintain the requested number of standby replicas."]


def test_every_task_active_and_standby_once() -> None:
    subs = topology(3, True, "sub")
    result = assign([member(f"m{i}", f"p{i}") for i in (1, 2, 3)], subs, 1)
    assert active(result, "m1", "m2", "m3") == all_tasks(subs)
    assert standby(result, "m1", "m2", "m3") == all_tasks(subs)


def test_each_process_gets_a_task_if_possible() -> None:
    subs = topology(3, False, "sub")
    result = assign([member("m1_1", "p1"), member("m1_2", "p1"), member("m1_3", "p1"),
                     member("m2", "p2"), member("m3", "p3")], subs)
    assert n_active(result, "m1_1", "m1_2", "m1_3") == 1
    assert n_active(result, "m2") == 1
    assert n_active(result, "m3") == 1


def test_more_members_than_tasks() -> None:
    subs = topology(3, False, "sub")
    ids = [f"m{i}" for i in range(1, 7)]
    result = assign([member(m, f"p{m[1:]}") for m in ids], subs)
    assert n_active(result, *ids) == 3
    assert active(result, *ids) == all_tasks(subs)


def test_active_and_standby_spread_over_members() -> None:
    subs = topology(3, True, "sub")
    ids = [f"m{i}" for i in range(1, 7)]
    result = assign([member(m, f"p{m[1:]}") for m in ids], subs, 1)
    for m in ids:
        assert len(active(result, m)) + len(standby(result, m)) == 1


def test_process_with_more_threads_gets_more_tasks() -> None:
    subs = topology(3, False, "sub0", "sub1", "sub2", "sub3")
    result = assign([member("m1", "p1"), member("m2_1", "p2"), member("m2_2", "p2")], subs)
    assert n_active(result, "m2_1", "m2_2") == 8
    assert n_active(result, "m1") == 4


def test_rebalance_when_capacity_equals_task_count() -> None:
    subs = topology(4, False, "sub")
    result = assign([member("m1", "p1"), member("m2", "p2"),
                     member("m3", "p3", {"sub": [0, 1, 2, 3]}), member("m4", "p4")], subs)
    for m in ("m1", "m2", "m3", "m4"):
        assert n_active(result, m) == 1


def test_rebalance_when_capacity_below_task_count() -> None:
    subs = topology(4, False, "sub")
    result = assign([member("m1", "p1"), member("m2", "p2"),
                     member("m3", "p3", {"sub": [0, 1, 2, 3]})], subs)
    assert n_active(result, "m1") == 1
    assert n_active(result, "m2") == 1
    assert n_active(result, "m3") == 2


def test_rebalance_by_process_capacity() -> None:
    subs = topology(3, False, "sub")
    result = assign([member("m2", "p2", {"sub": [0, 2, 3]}), member("m3_1", "p3"),
                     member("m3_2", "p3")], subs)
    assert n_active(result, "m2") == 1
    assert n_active(result, "m3_1", "m3_2") == 2


def test_new_process_moves_minimal_tasks() -> None:
    subs = topology(4, False, "sub")
    result = assign([member("m1", "p1", {"sub": [0, 2]}), member("m2", "p2", {"sub": [1, 3]}),
                     member("m3", "p3")], subs)
    assert n_active(result, "m3") == 1
    taken = parts(result, "m3", "sub")
    if taken & {0, 2}:
        assert parts(result, "m2", "sub") == {1, 3}
    else:
        assert parts(result, "m1", "sub") == {0, 2}


def test_new_tasks_do_not_move_old_ones() -> None:
    subs = topology(6, False, "sub")
    result = assign([member("m1", "p1", {"sub": [0, 1]}), member("m2", "p2", {"sub": [2, 3]})],
                    subs)
    assert {0, 1} <= parts(result, "m1", "sub")
    assert {2, 3} <= parts(result, "m2", "sub")


def test_new_tasks_go_to_new_process() -> None:
    subs = topology(6, False, "sub")
    result = assign([member("m1", "p1", {"sub": [2, 1]}), member("m2", "p2", {"sub": [0, 3]}),
                     member("m3", "p3")], subs)
    assert {1, 2} <= parts(result, "m1", "sub")
    assert {0, 3} <= parts(result, "m2", "sub")
    assert {4, 5} <= parts(result, "m3", "sub")


def test_new_member_gets_tasks_not_active_before() -> None:
    subs = topology(4, False, "sub0", "sub1", "sub2")
    everything = {"sub0": [0, 1, 2, 3], "sub1": [0, 1, 2, 3], "sub2": [0, 1, 2, 3]}
    result = assign([
        member("m1", "p1", {"sub0": [1], "sub1": [2, 3]},
               {"sub0": [0], "sub1": [1], "sub2": [0, 1, 3]}),
        member("m2", "p2", {"sub0": [0], "sub1": [1], "sub2": [2]},
               {"sub0": [1, 2, 3], "sub1": [0, 2, 3], "sub2": [0, 1, 3]}),
        member("m3", "p3", {"sub2": [0, 1, 3]}, {"sub0": [2], "sub1": [2]}),
        member("newMember", "p4", None, everything),
    ], subs)
    assert result.member("m1").active == {"sub0": {1}, "sub1": {2, 3}}
    assert result.member("m2").active == {"sub0": {0}, "sub1": {1}, "sub2": {2}}
    assert result.member("m3").active == {"sub2": {0, 1, 3}}
    assert result.member("newMember").active == {"sub0": {2, 3}, "sub1": {0}}


def test_bounced_members_get_their_standby_tasks_as_active() -> None:
    subs = topology(4, False, "sub0", "sub1", "sub2")
    result = assign([
        member("m1", "p1", {"sub0": [1], "sub1": [2, 3]},
               {"sub0": [0], "sub1": [1], "sub2": [0, 1, 3]}),
        member("m2", "p2", {"sub0": [0], "sub1": [1], "sub2": [2]},
               {"sub0": [1, 2, 3], "sub1": [0, 2, 3], "sub2": [0, 1, 3]}),
        member("bounce_member1", "bounce1", None, {"sub2": [0, 1, 3]}),
        member("bounce_member2", "bounce2", None, {"sub0": [2, 3], "sub1": [0]}),
    ], subs)
    assert result.member("m1").active == {"sub0": {1}, "sub1": {2, 3}}
    assert result.member("m2").active == {"sub0": {0}, "sub1": {1}, "sub2": {2}}
    assert result.member("bounce_member1").active == {"sub2": {0, 1, 3}}
    assert result.member("bounce_member2").active == {"sub0": {2, 3}, "sub1": {0}}


def test_new_member_with_one_task_over_quota() -> None:
    subs = topology(2, False, "sub")
    result = assign([member("m1", "p1", {"sub": [1, 2]}), member("m2", "p2")], subs)
    assert n_active(result, "m1") == 1


def test_new_member_without_flipping_existing_ones() -> None:
    subs = topology(6, False, "sub")
    result = assign([member("m1", "p1", {"sub": [0, 1, 2]}), member("m2", "p2", {"sub": [3, 4, 5]}),
                     member("newMember", "p3")], subs)
    m1, m2 = parts(result, "m1", "sub"), parts(result, "m2", "sub")
    assert not m1 & {3, 4, 5} and len(m1) == 2
    assert not m2 & {0, 1, 2} and len(m2) == 2
    assert n_active(result, "newMember") == 2


def test_new_member_without_flipping_existing_and_bounced_ones() -> None:
    subs = topology(7, False, "sub")
    result = assign([member("m1", "p1", {"sub": [0, 1, 2, 6]}),
                     member("m2", "p2", None, {"sub": [3, 4, 5]}),
                     member("newMember", "newProcess")], subs)
    m1, m2 = parts(result, "m1", "sub"), parts(result, "m2", "sub")
    assert not m1 & {3, 4, 5} and len(m1) == 3
    assert not m2 & {0, 1, 2} and len(m2) == 2
    assert n_active(result, "newMember") == 2


def test_many_tasks_two_standby_replicas() -> None:
    subs = topology(100, True, "sub")
    ids = [f"m{i}" for i in range(5)]
    result = assign([member(m, f"p{m[1:]}") for m in ids], subs, 2)
    assert active(result, *ids) == all_tasks(subs)
    for m in ids:
        assert n_active(result, m) == 20
        assert not active(result, m) & standby(result, m)
    # every task gets both replicas (5 processes); Kafka only asserts some do
    assert sum(len(standby(result, m)) for m in ids) == 200


def test_odd_number_of_members_with_standby() -> None:
    subs = topology(14, True, "sub")
    ids = [f"m{i}" for i in range(7)]
    result = assign([member(m, f"p{m[1:]}") for m in ids], subs, 1)
    assert active(result, *ids) == all_tasks(subs)
    assert sum(len(standby(result, m)) for m in ids) == 14
    assert standby(result, *ids) == all_tasks(subs)
    assert all(n_active(result, m) == 2 for m in ids)


def test_more_standby_replicas_than_other_processes() -> None:
    subs = topology(6, True, "sub")
    ids = [f"m{i}" for i in range(3)]
    result = assign([member(m, f"p{m[1:]}") for m in ids], subs, 5)
    assert active(result, *ids) == all_tasks(subs)
    # 2 other processes for every task: 2 of the 5 replicas each
    assert sum(len(standby(result, m)) for m in ids) == 12


def test_many_stateful_subtopologies_get_standbys() -> None:
    subs = topology(5, True, *(f"subtopology-{i}" for i in range(10)))
    ids = [f"m{i}" for i in range(4)]
    result = assign([member(m, f"p{m[1:]}") for m in ids], subs, 1)
    assert set().union(*(result.member(m).active for m in ids)) == {s.subtopology_id for s in subs}
    assert set().union(*(result.member(m).standby for m in ids)) == {
        s.subtopology_id for s in subs}


def test_single_member_many_replicas() -> None:
    subs = topology(10, True, "sub")
    result = assign([member("m1", "p1")], subs, 3)
    assert n_active(result, "m1") == 10
    assert result.member("m1").standby == {}


def test_two_members_five_replicas() -> None:
    subs = topology(4, True, "sub")
    result = assign([member("m0", "p0"), member("m1", "p1")], subs, 5)
    assert active(result, "m0", "m1") == all_tasks(subs)
    assert sum(len(standby(result, m)) for m in ("m0", "m1")) == 4


def test_new_node_joins_active_and_standby_owners() -> None:
    subs = topology(4, True, "sub")
    result = assign([member("m1", "p1", {"sub": [0, 1]}, {"sub": [2, 3]}),
                     member("m2", "p2", {"sub": [2, 3]}, {"sub": [0, 1]}),
                     member("m3", "p3")], subs, 1)
    ids = ("m1", "m2", "m3")
    assert active(result, *ids) == all_tasks(subs)
    assert standby(result, *ids) == all_tasks(subs)
    for m in ids:
        assert 1 <= n_active(result, m) <= 2
        assert len(active(result, m)) + len(standby(result, m)) <= 3


@pytest.mark.parametrize("previous", [{"sub1": [0, 1], "sub2": [0, 1]}, None])
def test_one_task_of_each_subtopology_per_member(
        previous: dict[str, list[int]] | None) -> None:
    subs = topology(2, True, "sub1", "sub2")
    result = assign([member("m1", "p1", previous), member("m2", "p2")], subs, 1)
    for m in ("m1", "m2"):
        for sub in ("sub1", "sub2"):
            assert len(parts(result, m, sub)) == 1
            assert len(parts(result, m, sub, "standby")) == 1
    for sub in ("sub1", "sub2"):
        assert parts(result, "m1", sub) | parts(result, "m2", sub) == {0, 1}


def test_previous_standby_kept_when_below_quota() -> None:
    subs = topology(2, True, "sub")
    result = assign([member("m1", "p1", {"sub": [0]}, {"sub": [1]}),
                     member("m2", "p2", {"sub": [1]}), member("m3", "p3")], subs, 1)
    assert parts(result, "m1", "sub") == {0}
    assert parts(result, "m1", "sub", "standby") == {1}
    assert len(active(result, "m1")) + len(standby(result, "m1")) <= 2


def test_standby_to_previous_standby_that_does_not_hold_the_active() -> None:
    subs = topology(3, True, "sub")
    result = assign([member("m1", "p1", None, {"sub": [2]}),
                     member("m2", "p2", {"sub": [0]}, {"sub": [2]}),
                     member("m3", "p3", {"sub": [1]}), member("m4", "p4")], subs, 1)
    # Kafka: active 0, 1 stay; 2 is promoted from m1's standby (not m2's: m2 has an active);
    # standby 2 stays on m2; one of standby 0, 1 must go to m4, the other anywhere but m2
    assert parts(result, "m1", "sub") == {2}
    assert parts(result, "m2", "sub") == {0} and parts(result, "m2", "sub", "standby") == {2}
    assert parts(result, "m3", "sub") == {1}
    assert result.member("m4").active == {}
    assert standby(result, "m1", "m3", "m4") == {("sub", 0), ("sub", 1)}
    assert standby(result, "m4")
    # Kafka's test expects standby 0 on m3, but says m1 is as correct: after standby 1 went
    # to p4, p1, p3 and p4 tie at load 1 (Kafka's heap picks any); the lowest process id wins
    assert parts(result, "m1", "sub", "standby") == {0}
    assert parts(result, "m4", "sub", "standby") == {1}


# -- the streams spec's worked examples (exact) ---------------------------------------------

def test_fresh_round_robin_not_ranges() -> None:
    result = assign([member("A", "p1"), member("B", "p2")], topology(4, False, "0"))
    assert result.member("A").active == {"0": {0, 2}}
    assert result.member("B").active == {"0": {1, 3}}


def test_joiner_takes_the_tail_beyond_quota() -> None:
    result = assign([member("A", "p1", {"0": [0, 1, 2, 3]}), member("B", "p2")],
                    topology(4, False, "0"))
    assert result.member("A").active == {"0": {0, 1}}
    assert result.member("B").active == {"0": {2, 3}}


def test_fresh_standbys_cross_over() -> None:
    result = assign([member("A", "p1"), member("B", "p2")], topology(2, True, "0"), 1)
    assert roles(result) == {"A": ({"0": {0}}, {"0": {1}}), "B": ({"0": {1}}, {"0": {0}})}


def test_one_process_two_threads_no_standby(caplog: pytest.LogCaptureFixture) -> None:
    with caplog.at_level(logging.WARNING, logger="assignors.sticky_task"):
        result = assign([member("A1", "p1"), member("A2", "p1")], topology(2, True, "0"), 1)
    assert roles(result) == {"A1": ({"0": {0}}, {}), "A2": ({"0": {1}}, {})}
    assert len(caplog.records) == 2


def test_leaving_member_standby_is_promoted() -> None:
    result = assign([member("B", "p2", {"0": [1]}, {"0": [0]})], topology(2, True, "0"), 1)
    assert roles(result) == {"B": ({"0": {0, 1}}, {})}


def test_two_threads_share_a_process_never_a_task() -> None:
    subs = topology(3, True, "0", "1")
    result = assign([member("a1", "p1"), member("a2", "p1"), member("b1", "p2")], subs, 1)
    for task in all_tasks(subs):
        on_p1 = [task in active(result, m) or task in standby(result, m) for m in ("a1", "a2")]
        assert sum(on_p1) == 1  # each task on p1 once (two processes, one replica)


def test_stateless_subtopology_has_no_standbys() -> None:
    subs = (SubtopologyTasks("0", 3, False), SubtopologyTasks("1", 3, True))
    result = assign([member("a", "p1"), member("b", "p2"), member("c", "p3")], subs, 2)
    assert standby(result, "a", "b", "c") == all_tasks(subs, stateful_only=True)
    assert all("0" not in result.member(m).standby for m in "abc")


def test_output_shape() -> None:
    subs = (SubtopologyTasks("b", 2, True), SubtopologyTasks("a", 2, True),
            SubtopologyTasks("empty", 0, True), SubtopologyTasks("Z", 1, False))
    result = assign([member("m2", "p2", None, None), member("m1", "p1"),
                     TaskMember("m3", "p1", warmup=tasks_map({"a": [0]}))], subs, 1)
    assert list(result.members) == ["m1", "m2", "m3"]
    for m in result.members.values():
        assert m.warmup == {}
        for tasks in (m.active, m.standby):
            assert list(tasks) == sorted(tasks, key=java_key)
            assert all(tasks.values())  # no empty partition sets
            assert "empty" not in tasks
    assert result.member("unknown").active == {}


def test_subtopology_ids_in_java_order() -> None:
    # U+FF21 sorts after U+1F600 in code points but before it in UTF-16 code units
    subs = (SubtopologyTasks("\U0001f600", 1, False), SubtopologyTasks("\uff21", 1, False))
    result = assign([member("m", "p")], subs)
    assert list(result.member("m").active) == ["\U0001f600", "\uff21"]
    # (partition, subtopology) order for stickiness: the emoji's task is first
    result = assign([member("a", "p1", {"\U0001f600": [0], "\uff21": [0]}), member("b", "p2")],
                    subs)
    assert result.member("a").active == {"\U0001f600": {0}}


def test_empty_group_and_empty_topology() -> None:
    assert assign([], topology(3, True, "0"), 1).members == {}
    assert assign([], (), 0).members == {}
    result = assign([member("m", "p", {"gone": [1]})], (), 1)
    assert roles(result) == {"m": ({}, {})}
    result = assign([member("m", "p")], topology(0, True, "0"), 1)
    assert roles(result) == {"m": ({}, {})}


def test_previous_tasks_outside_the_topology_are_ignored() -> None:
    subs = topology(2, True, "0")
    result = assign([member("a", "p1", {"0": [5, -1], "x": [0]}, {"0": [7], "y": [1]}),
                     member("b", "p2")], subs, 1)
    assert roles(result) == reference_assign(
        TaskAssignmentSpec((member("a", "p1"), member("b", "p2")), subs, 1))


def test_duplicated_previous_active_goes_to_greater_member_id() -> None:
    subs = topology(2, False, "0")
    result = assign([member("b", "p2", {"0": [0]}), member("a", "p1", {"0": [0]})], subs)
    assert result.member("b").active == {"0": {0}}


@pytest.mark.parametrize("spec,message", [
    (TaskAssignmentSpec((), (), -1), "num.standby.replicas"),
    (TaskAssignmentSpec((member("m", "p"), member("m", "q")), ()), "duplicate member id"),
    (TaskAssignmentSpec((), (SubtopologyTasks("0", -1, False),)), "has -1 tasks"),
    (TaskAssignmentSpec((), (SubtopologyTasks("0", 1, False), SubtopologyTasks("0", 2, True))),
     "duplicate subtopology id"),
])
def test_spec_validation(spec: TaskAssignmentSpec, message: str) -> None:
    with pytest.raises(TaskAssignmentSpecError, match=message):
        ASSIGNOR.assign(spec)


# -- properties -----------------------------------------------------------------------------

SUB_IDS = ("0", "1", "2", "10", "a", "B", "\uff21", "\U0001f600")

# ``specs`` draws from strategies built once for their arguments (``assignor_checks``).
_SUB_ID_LISTS = lists_of(sampled(SUB_IDS), max_size=4, unique=True)


@st.composite
def specs(draw: st.DrawFn, messy: bool = True, max_members: int = 9,
          max_tasks: int = 9) -> TaskAssignmentSpec:
    """Random processes/threads, subtopologies, replicas, and a random previous target.

    ``messy``: the previous target may be anything (duplicated actives, a member with the
    same task active and standby, tasks outside the topology, warm-ups); otherwise every task
    has at most one previous active owner and its standbys are on other members."""
    n_members = draw(integers(0, max_members))
    n_processes = draw(integers(1, max(1, n_members)))
    ids = draw(_SUB_ID_LISTS)
    subs = tuple(SubtopologyTasks(s, draw(integers(0, max_tasks)), draw(BOOLEANS))
                 for s in ids)
    replicas = draw(integers(0, 3))
    member_ids = tuple(f"m{i}" for i in range(n_members))
    prev: dict[str, list[dict[str, set[int]]]] = {
        m: [defaultdict(set), defaultdict(set), defaultdict(set)] for m in member_ids}
    history = draw(sampled(("none", "some", "full")))
    if member_ids and history != "none":
        for sub in subs:
            for p in range(sub.num_tasks + (2 if messy else 0)):
                if history == "some" and draw(BOOLEANS):
                    continue
                owners = (draw(lists_of(sampled(member_ids), max_size=2)) if messy
                          else [draw(sampled(member_ids))])
                for m in owners:
                    prev[m][0][sub.subtopology_id].add(p)
                others = tuple(m for m in member_ids if messy or m not in owners)
                if others and sub.stateful:
                    for m in draw(lists_of(sampled(others), max_size=replicas, unique=True)):
                        prev[m][1][sub.subtopology_id].add(p)
                if messy and draw(BOOLEANS):
                    prev[draw(sampled(member_ids))][2][sub.subtopology_id].add(p)
        if messy and draw(BOOLEANS):
            prev[member_ids[0]][0]["gone"].add(0)
            prev[member_ids[-1]][1]["gone"].add(1)
    members = []
    for i, m in enumerate(member_ids):
        process = f"p{draw(integers(0, n_processes - 1))}" if i else "p0"
        a, s, w = (tasks_map(x) for x in prev[m])
        members.append(TaskMember(m, process, a, s, w))
    return TaskAssignmentSpec(tuple(members), subs, replicas)


def shuffled(spec: TaskAssignmentSpec, seed: int) -> TaskAssignmentSpec:
    rng = random.Random(seed)
    members, subs = list(spec.members), list(spec.subtopologies)
    rng.shuffle(members)
    rng.shuffle(subs)
    return TaskAssignmentSpec(tuple(members), tuple(subs), spec.num_standby_replicas)


def check_valid(spec: TaskAssignmentSpec, result: TaskAssignment) -> None:
    """Every task active exactly once; standbys only for stateful tasks, never twice on a
    process; exactly min(replicas, processes - 1) of them per stateful task; no warm-ups."""
    assert list(result.members) == sorted(m.member_id for m in spec.members)
    process_of = {m.member_id: m.process_id for m in spec.members}
    processes = set(process_of.values())
    owners: dict[Task, list[str]] = defaultdict(list)
    on_process: dict[Task, list[str]] = defaultdict(list)
    standbys: dict[Task, int] = defaultdict(int)
    for m, target in result.members.items():
        assert target.warmup == {}
        for t in flat(target.active):
            owners[t].append(m)
            on_process[t].append(process_of[m])
        for t in flat(target.standby):
            standbys[t] += 1
            on_process[t].append(process_of[m])
        for tasks in (target.active, target.standby):
            assert all(tasks.values())
    expected = all_tasks(spec.subtopologies) if spec.members else set()
    assert set(owners) == expected
    assert all(len(o) == 1 for o in owners.values())
    stateful = all_tasks(spec.subtopologies, stateful_only=True) if spec.members else set()
    assert set(standbys) <= stateful
    want = min(spec.num_standby_replicas, len(processes) - 1)
    for t in stateful:
        assert standbys.get(t, 0) == want, t
    for t, ps in on_process.items():
        assert len(ps) == len(set(ps)), (t, ps)


@pytest.mark.slow
@PROPS
@given(specs())
def test_matches_reference_model(spec: TaskAssignmentSpec) -> None:
    assert roles(ASSIGNOR.assign(spec)) == reference_assign(spec)


@pytest.mark.slow
@PROPS
@given(specs(max_members=40, max_tasks=30))
def test_matches_reference_model_larger(spec: TaskAssignmentSpec) -> None:
    assert roles(ASSIGNOR.assign(spec)) == reference_assign(spec)


@pytest.mark.slow
@PROPS
@given(specs(), st.integers(0, 2**32))
def test_valid_and_deterministic(spec: TaskAssignmentSpec, seed: int) -> None:
    result = ASSIGNOR.assign(spec)
    check_valid(spec, result)
    assert ASSIGNOR.assign(spec) == result
    assert ASSIGNOR.assign(shuffled(spec, seed)) == result
    assert ASSIGNOR.assign(pickle.loads(pickle.dumps(spec))) == result
    assert pickle.loads(pickle.dumps(result)) == result


@PROPS
@given(specs(messy=False))
def test_active_balance(spec: TaskAssignmentSpec) -> None:
    """No history: process loads (active tasks per thread) differ by less than one task per
    thread of the more loaded process, and threads of a process by at most one task."""
    spec = TaskAssignmentSpec(tuple(TaskMember(m.member_id, m.process_id)
                                    for m in spec.members),
                              spec.subtopologies, spec.num_standby_replicas)
    assume(spec.members)
    result = ASSIGNOR.assign(spec)
    threads: dict[str, list[int]] = defaultdict(list)
    for m in spec.members:
        threads[m.process_id].append(n_active(result, m.member_id))
    for counts in threads.values():
        assert max(counts) - min(counts) <= 1
    loads = {p: sum(c) / len(c) for p, c in threads.items()}
    top = max(loads, key=loads.__getitem__)
    assert loads[top] - min(loads.values()) <= 1 / len(threads[top]) + 1e-9


@PROPS
@given(specs(messy=False))
def test_active_balance_single_threaded(spec: TaskAssignmentSpec) -> None:
    """One thread per process, any valid history: active counts differ by at most one."""
    spec = TaskAssignmentSpec(
        tuple(TaskMember(m.member_id, m.member_id, m.active, m.standby)
              for m in spec.members), spec.subtopologies, spec.num_standby_replicas)
    assume(spec.members)
    result = ASSIGNOR.assign(spec)
    counts = [n_active(result, m.member_id) for m in spec.members]
    assert max(counts) - min(counts) <= 1


@PROPS
@given(specs(messy=False))
def test_stickiness_within_quota(spec: TaskAssignmentSpec) -> None:
    """With a valid history, a member keeps at least min(previous, floor(tasks / members))
    of its previous active tasks; all of them when everyone is within that quota."""
    assume(spec.members)
    result = ASSIGNOR.assign(spec)
    valid = all_tasks(spec.subtopologies)
    floor = len(valid) // len(spec.members)
    for m in spec.members:
        previous = flat(m.active) & valid
        kept = previous & active(result, m.member_id)
        assert len(kept) >= min(len(previous), floor)
    if all(len(flat(m.active) & valid) <= floor for m in spec.members):
        for m in spec.members:
            assert flat(m.active) & valid <= active(result, m.member_id)


@PROPS
@given(specs(messy=False, max_members=12))
def test_stable_target_is_kept(spec: TaskAssignmentSpec) -> None:
    """Assigning again from its own result with a single-threaded group changes nothing when
    standbys are off (each process keeps its quota of previous tasks)."""
    spec = TaskAssignmentSpec(tuple(TaskMember(m.member_id, m.member_id)
                                    for m in spec.members), spec.subtopologies, 0)
    first = ASSIGNOR.assign(spec)
    again = ASSIGNOR.assign(TaskAssignmentSpec(
        tuple(TaskMember(m.member_id, m.process_id, first.member(m.member_id).active)
              for m in spec.members), spec.subtopologies, 0))
    assert again == first


def test_large_round_trip_matches_reference() -> None:
    """A bench-shaped group (threads, half stateful, one replica) from scratch, then after a
    member joins and a member leaves."""
    subs = tuple(SubtopologyTasks(f"s{i}", 7 + i % 5, i % 2 == 0) for i in range(12))
    members = [TaskMember(f"m{i:02d}", f"p{i // 3}") for i in range(20)]
    spec = TaskAssignmentSpec(tuple(members), subs, 1)
    first = ASSIGNOR.assign(spec)
    assert roles(first) == reference_assign(spec)
    previous = [TaskMember(m.member_id, m.process_id, first.member(m.member_id).active,
                           first.member(m.member_id).standby) for m in members]
    for group in ([*previous, TaskMember("new", "p-new")], previous[1:]):
        spec = TaskAssignmentSpec(tuple(group), subs, 1)
        result = ASSIGNOR.assign(spec)
        check_valid(spec, result)
        assert roles(result) == reference_assign(spec)


def test_total_quota_drops_while_least_loaded_active_tasks_are_given() -> None:
    """The total quota a sticky standby is checked against can drop in pass 3 (T = 5 active,
    6 in all, 4 members: both quotas 2). Pass 1: m1 keeps b_0, m0 keeps b_2 and b_3 (its
    count reaches both quotas: active 1, total stays 2). Pass 2: a_0 is not promoted to m1,
    its previous standby (at the active quota 1). Pass 3: a_0 and b_1 go to p1 (b_1 on a
    load tie with p3, by process id), where m2 reaches the total quota, which drops to 1. So
    the standby of a_0 is not m1's any more (count 1): it goes to the least loaded process
    not holding it, p3, to its member with the fewest tasks, m3."""
    subs = (SubtopologyTasks("a", 1, True), SubtopologyTasks("b", 4, False))
    spec = TaskAssignmentSpec((member("m0", "p3", {"b": [2, 3]}),
                               member("m1", "p3", {"b": [0]}, {"a": [0]}),
                               member("m2", "p1"), member("m3", "p3")), subs, 1)
    result = ASSIGNOR.assign(spec)
    assert roles(result) == {"m0": ({"b": {2, 3}}, {}), "m1": ({"b": {0}}, {}),
                             "m2": ({"a": {0}, "b": {1}}, {}), "m3": ({}, {"a": {0}})}
    assert roles(result) == reference_assign(spec)


def test_quota_arithmetic() -> None:
    # Kafka's computeTasksPerMember is ceil(tasks / members), 0 without members
    from assignors.sticky_task import _tasks_per_member
    for tasks in range(0, 30):
        for members in range(0, 7):
            want = 0 if members == 0 else math.ceil(tasks / members)
            assert _tasks_per_member(tasks, members) == want
