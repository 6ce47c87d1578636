"""The ``sticky`` task assignor of streams groups (KIP-1071; Kafka 4.3's ``StickyTaskAssignor``).

Members are grouped into *processes* by process id. A process's *load* is its task count
(active and standby) divided by its number of members; a member's count is its active plus
standby tasks. Two quotas, recomputed as members fill up (Kafka's arithmetic)::

    active quota = ceil(active tasks / members)                 (active phase only)
    total quota  = ceil((active + standby tasks) / members)
    when a member's count reaches a quota exactly: that quota's members -= 1, its tasks -=
    the count, and the quota is recomputed (0 once no member is left)

Active tasks, in (partition, subtopology id) order:

1. a task goes back to the member whose previous target had it active, if that member is
   below the active quota;
2. a task left goes to the least loaded member whose previous target had it as a standby
   (see :func:`_least_loaded_previous`), if below the active quota;
3. the rest, in (subtopology id, partition) order, to the least loaded process (no quota),
   and within it to the member with the fewest tasks.

Standby tasks (``num_standby_replicas > 0``, stateful subtopologies only), over the tasks in
descending (partition, subtopology id) order, replica by replica: to the previous active
member if its process does not hold the task yet and it is below the total quota; else to
the least loaded previous standby member whose process does not hold the task, if below the
total quota; else the task's remaining replicas are queued. The queue, in descending
(subtopology id, partition) order, goes to the least loaded process not holding the task
(its member with the fewest tasks); when every process holds it, the rest of the task's
replicas are given up with Kafka's warning. A process never holds a task twice, so every
stateful task gets exactly ``min(num_standby_replicas, processes - 1)`` standbys.

Determinism (Kafka breaks these ties by hash order): processes are ordered by (load, process
id), members by (task count, member id); when two members of the previous target had the
same task active, the one with the greater member id counts as its previous owner.
Subtopology ids compare as Java strings (UTF-16 code units). Warm-up tasks are never given
(and previous ones are ignored). Kafka throws when there are tasks but no member; here an
empty group gets an empty assignment.

Kafka's heap loops are replaced by bulk steps with the same outcome (see :class:`_Run`).
"""

from __future__ import annotations

import logging
from bisect import bisect_right
from collections.abc import Sequence
from heapq import heapify, heappop, heapreplace
from itertools import accumulate, chain, groupby, repeat
from math import lcm
from operator import attrgetter
from typing import ClassVar

from assignors.task_spec import (
    MemberTaskAssignment,
    TaskAssignment,
    TaskAssignmentSpec,
    Tasks,
)

log = logging.getLogger(__name__)

_NO_CAPACITY = (
    "Unable to assign %d of %d standby tasks for task [%s_%d]. There is not enough available "
    "capacity. You should increase the number of threads and/or application instances to "
    "maintain the requested number of standby replicas.")


def _java_string_key(value: str) -> bytes:
    """Orders like Java's ``String.compareTo`` (UTF-16 code units)."""
    return value.encode("utf-16-be", "surrogatepass")


def _tasks_per_member(tasks: int, members: int) -> int:
    """Kafka's ``computeTasksPerMember``: ceil(tasks / members), 0 without members (with
    Java's truncating division, should ``tasks`` ever be negative)."""
    if members <= 0:
        return 0
    quotient = abs(tasks) // members
    if tasks < 0:
        return -quotient
    return quotient + 1 if tasks % members else quotient


class StickyTaskAssignor:
    """Kafka 4.3's only streams task assignor: balanced by process load, sticky to the
    previous target, standbys never on a process that holds the task. Pure and
    deterministic; stateless, so one instance can be shared or pickled."""

    name: ClassVar[str] = "sticky"

    def assign(self, spec: TaskAssignmentSpec) -> TaskAssignment:
        """The new target of every member of ``spec``."""
        spec.validate()
        return _Run(spec).result()

    def __repr__(self) -> str:
        return f"{type(self).__name__}()"


class _Slots:
    """The order in which "the least loaded process" picks processes, computed in bulk.

    Kafka polls a heap of processes by load, gives the top one a task and pushes it back. A
    process with ``k`` tasks and ``cap`` members is picked at loads ``k / cap``, ``(k + 1) /
    cap``, ...: its *slots*. As long as nothing else changes the loads, the heap hands out
    the slots of all processes merged in (load, process) order, which is a sort of integers
    ``load * lcm(caps) * P + process`` (exact, where the heap compares doubles; they agree
    for any realistic task count). :attr:`procs` is the process of each slot, in order;
    :meth:`extend` replaces it with the next chunk (all of whose slots come after it)."""

    def __init__(self, tasks: Sequence[int], capacity: Sequence[int]) -> None:
        self.tasks = tasks
        self.capacity = capacity
        self.unit = lcm(*set(capacity))
        self.generated = [0] * len(capacity)
        self.procs: list[int] = []

    def extend(self, wanted: int) -> None:
        """The next chunk of at least ``wanted`` slots: for a level ``X`` chosen so that
        every process's slots below it add up to ``wanted``, all slots not yet generated
        below ``X``."""
        tasks, capacity, generated, unit = self.tasks, self.capacity, self.generated, self.unit
        n = len(capacity)
        total_capacity = sum(capacity)
        level = wanted + sum(tasks) + sum(generated)  # X = level / total_capacity
        keys: list[int] = []
        for p in range(n):
            cap = capacity[p]
            frontier = tasks[p] + generated[p]
            count = -((frontier * total_capacity - level * cap) // total_capacity)
            if count > 0:
                step = unit // cap * n
                first = frontier * step + p
                keys.extend(range(first, first + count * step, step))
                generated[p] += count
        keys.sort()
        self.procs = [key % n for key in keys]


class _Run:
    """One assignment. Tasks are dense ints: subtopologies in id order, then partitions, so
    ascending task index is (subtopology id, partition) order; ``partition * S +
    subtopology index`` (:meth:`keys`) orders them by (partition, subtopology id). Members
    and processes are indexes in id order.

    Kafka's heap loops ("the least loaded process", then its least loaded member) are
    replaced by bulk steps with the same outcome: :class:`_Slots` for the processes, split
    between the members of a process by :meth:`_split`; the quota updates they cause are
    replayed afterwards (:meth:`_replay_total`). The sticky passes stay per-task loops over
    arrays (in CPython a tight loop beats sorting and replaying them in bulk)."""

    def __init__(self, spec: TaskAssignmentSpec) -> None:
        members = sorted(spec.members, key=attrgetter("member_id"))
        subs = sorted(spec.subtopologies, key=lambda s: _java_string_key(s.subtopology_id))
        self.members = members
        self.sub_ids = [s.subtopology_id for s in subs]
        self.sizes = sizes = [s.num_tasks for s in subs]
        self.bases = bases = list(accumulate(sizes, initial=0))
        self.task_count = task_count = bases[-1]
        self.replicas = spec.num_standby_replicas
        self.stateful = [s for s, sub in enumerate(subs) if sub.stateful and sub.num_tasks]
        self._keys: list[int] | None = None
        self.task_sub: list[int] | None = None  # task -> subtopology index, for the output
        self.task_part: list[int] = []  # task -> partition, for the output

        process_ids = sorted({m.process_id for m in members})
        process_index = {p: i for i, p in enumerate(process_ids)}
        self.process_ids = process_ids
        self.member_process = member_process = [process_index[m.process_id] for m in members]
        process_members: list[list[int]] = [[] for _ in process_ids]
        for m, p in enumerate(member_process):
            process_members[p].append(m)
        self.process_members = process_members
        self.capacity = [len(ms) for ms in process_members]

        member_count = len(members)
        total_tasks = task_count + sum(sizes[s] for s in self.stateful) * self.replicas
        self.active_left = task_count
        self.active_cap = member_count
        self.active_quota = _tasks_per_member(task_count, member_count)
        self.total_left = total_tasks
        self.total_cap = member_count
        self.total_quota = _tasks_per_member(total_tasks, member_count)

        self.count = [0] * member_count  # active + standby tasks per member
        self.process_tasks = [0] * len(process_ids)
        self.load = [0.0] * len(process_ids)
        self.active = [-1] * task_count  # task -> member (pass 3 fills it only for standbys)
        self.active_of: list[list[int]] = [[] for _ in members]
        self.standby_of: list[list[int]] = [[] for _ in members]
        self.left: list[int] | None = None  # tasks passes 1 and 2 left, None: all of them

        # the previous target, by task: its active member (when two members had it, the
        # later one) and its standby member; ``holders`` has them all when a task had
        # several standby members
        where = {sub.subtopology_id: (bases[s], sub.num_tasks) for s, sub in enumerate(subs)}
        prev_active = [-1] * task_count
        holder = [-1] * task_count
        any_active = any_standby = several = False
        for m, member in enumerate(members):
            for sid, parts in member.active.items():
                span = where.get(sid)
                if span is None:
                    continue
                start, n = span
                for p in parts:
                    if 0 <= p < n:
                        prev_active[start + p] = m
                        any_active = True
            for sid, parts in member.standby.items():
                span = where.get(sid)
                if span is None:
                    continue
                start, n = span
                for p in parts:
                    if 0 <= p < n:
                        if holder[start + p] >= 0:
                            several = True
                        holder[start + p] = m
                        any_standby = True
        holders: dict[int, list[int]] | None = None
        if several:
            holders = {}
            for m, member in enumerate(members):
                for sid, parts in member.standby.items():
                    span = where.get(sid)
                    if span is None:
                        continue
                    start, n = span
                    for p in parts:
                        if 0 <= p < n:
                            holders.setdefault(start + p, []).append(m)
        self.prev_active = prev_active
        self.holder = holder
        self.holders = holders
        self.any_prev_active = any_active
        self.any_prev_standby = any_standby

    # -- helpers -------------------------------------------------------------------------

    def keys(self) -> list[int]:
        """Task index -> ``partition * S + subtopology index``."""
        if self._keys is None:
            width = len(self.sizes)
            self._keys = list(chain.from_iterable(
                range(s, s + n * width, width) for s, n in enumerate(self.sizes)))
        return self._keys

    def _refresh_loads(self) -> None:
        self.load = [k / c for k, c in zip(self.process_tasks, self.capacity, strict=True)]

    def _give_active(self, m: int, t: int) -> None:
        """Kafka's ``ProcessState.addTask`` (active) and ``maybeUpdate{Active,Total}
        TasksPerMember``."""
        p = self.member_process[m]
        self.active[t] = m
        self.active_of[m].append(t)
        c = self.count[m] = self.count[m] + 1
        k = self.process_tasks[p] = self.process_tasks[p] + 1
        self.load[p] = k / self.capacity[p]
        if c == self.active_quota:
            self.active_cap -= 1
            self.active_left -= c
            self.active_quota = _tasks_per_member(self.active_left, self.active_cap)
        if c == self.total_quota:
            self.total_cap -= 1
            self.total_left -= c
            self.total_quota = _tasks_per_member(self.total_left, self.total_cap)

    def _least_loaded_previous(self, candidates: Sequence[int],
                               holding: Sequence[int] | None) -> int:
        """Kafka's ``findPrevMemberWithLeastLoad``: the first eligible member, replaced by a
        later one only if both its process load and its task count are strictly lower.
        Members of the processes in ``holding`` are not eligible. -1 if none is."""
        best = -1
        best_load = 0.0
        best_count = 0
        load, count, member_process = self.load, self.count, self.member_process
        for m in candidates:
            p = member_process[m]
            if holding is not None and p in holding:
                continue
            if best < 0 or (load[p] < best_load and count[m] < best_count):
                best, best_load, best_count = m, load[p], count[m]
        return best

    def _split(self, p: int, picks: Sequence[int]) -> list[tuple[int, Sequence[int]]]:
        """Kafka's ``addTaskToLeastLoadedMember`` for ``len(picks)`` tasks in a row to
        process ``p``: which of ``picks`` (in order) each member gets, by (count, member).
        Updates the counts."""
        members = self.process_members[p]
        count = self.count
        if len(members) == 1:
            count[members[0]] += len(picks)
            return [(members[0], picks)]
        counts = [count[m] for m in members]
        low = min(counts)
        out: list[tuple[int, Sequence[int]]] = []
        width = len(members)
        got: Sequence[int]
        if max(counts) == low:  # in turn
            for j, m in enumerate(members):
                got = picks[j::width]
                count[m] += len(got)
                out.append((m, got))
            return out
        if max(counts) - low == 1:
            # the members at the lower count take one each, then all of them in turn
            first = [j for j, c in enumerate(counts) if c == low]
            head = dict(zip(first, picks, strict=False))
            rest = picks[len(first):]
            for j, m in enumerate(members):
                tail = rest[j::width]
                got = [head[j], *tail] if j in head else tail
                count[m] += len(got)
                out.append((m, got))
            return out
        heap = [(c, m) for c, m in zip(counts, members, strict=True)]
        heapify(heap)
        per: dict[int, list[int]] = {m: [] for m in members}
        for i in picks:
            c, m = heap[0]
            per[m].append(i)
            heapreplace(heap, (c + 1, m))
        for m, mine in per.items():
            count[m] += len(mine)
            out.append((m, mine))
        return out

    # -- active tasks --------------------------------------------------------------------

    def _by_partition(self) -> list[int]:
        """All tasks in (partition, subtopology id) order."""
        sizes, bases = self.sizes, self.bases
        width = len(sizes)
        if len(set(sizes)) == 1:
            size = sizes[0]
            order = [0] * (width * size)
            for s in range(width):
                order[s::width] = range(bases[s], bases[s] + size)
            return order
        return sorted(range(self.task_count), key=self.keys().__getitem__)

    def sticky_active(self) -> None:
        """Pass 1: every task, in (partition, subtopology id) order, back to its previous
        active member if that member is below the active quota (``_give_active`` inlined;
        loads are computed at the end)."""
        if not self.any_prev_active:
            return
        prev_active, active, active_of, count = (
            self.prev_active, self.active, self.active_of, self.count)
        quota, cap, quota_left = self.active_quota, self.active_cap, self.active_left
        total_quota, total_cap, total_left = self.total_quota, self.total_cap, self.total_left
        left: list[int] = []
        for t in self._by_partition():
            m = prev_active[t]
            if m < 0 or count[m] >= quota:
                left.append(t)
                continue
            active[t] = m
            active_of[m].append(t)
            c = count[m] = count[m] + 1
            if c == quota:
                cap -= 1
                quota_left -= c
                quota = _tasks_per_member(quota_left, cap)
            if c == total_quota:
                total_cap -= 1
                total_left -= c
                total_quota = _tasks_per_member(total_left, total_cap)
        self.active_quota, self.active_cap, self.active_left = quota, cap, quota_left
        self.total_quota, self.total_cap, self.total_left = total_quota, total_cap, total_left
        self.left = left
        self.process_tasks = [sum(map(count.__getitem__, ms)) for ms in self.process_members]
        self._refresh_loads()

    def promote_standbys(self) -> None:
        """Pass 2: a task left, in (partition, subtopology id) order, to its least loaded
        previous standby member (:meth:`_least_loaded_previous`), if below the active
        quota."""
        if not self.any_prev_standby:
            return
        left = self.left if self.left is not None else self._by_partition()
        holder, holders, count = self.holder, self.holders, self.count
        rest: list[int] = []
        for t in left:
            if holders is None:
                m = holder[t]
            else:
                previous = holders.get(t)
                m = -1 if previous is None else self._least_loaded_previous(previous, None)
            if m >= 0 and count[m] < self.active_quota:
                self._give_active(m, t)
            else:
                rest.append(t)
        self.left = rest

    def least_loaded_active(self) -> None:
        """Pass 3: the rest, in (subtopology id, partition) order, each to the least loaded
        process (no quota), within it to its member with the fewest tasks."""
        left: Sequence[int]
        if self.left is None:
            left = range(self.task_count)
        else:
            left = self.left
            left.sort()
        n = len(left)
        if not n:
            return
        capacity, process_tasks = self.capacity, self.process_tasks
        processes = len(capacity)
        picks: list[Sequence[int]]
        if len(set(capacity)) == 1 and len(set(process_tasks)) == 1:
            picks = [range(p, n, processes) for p in range(processes)]  # round robin
        else:
            slots = _Slots(process_tasks, capacity)
            slots.extend(n)
            per: list[list[int]] = [[] for _ in range(processes)]
            for i, p in enumerate(slots.procs[:n]):
                per[p].append(i)
            picks = list(per)
        track = self.replicas > 0 and bool(self.stateful)
        before = self.count[:] if track else []
        times: dict[int, Sequence[int]] = {}
        active, active_of, take = self.active, self.active_of, left.__getitem__
        every = isinstance(left, range)  # left[i] == i
        for p, got in enumerate(picks):
            if not got:
                continue
            process_tasks[p] += len(got)
            for m, mine in self._split(p, got):
                if not mine:
                    continue
                given = mine if every else list(map(take, mine))
                active_of[m].extend(given)
                if track:
                    times[m] = mine
                    if isinstance(given, range):
                        active[given.start:given.stop:given.step] = repeat(m, len(given))
                    else:
                        for t in given:
                            active[t] = m
        self._refresh_loads()
        if track:
            self._replay_total(before, times)
        # the active quota is not read after this pass

    def _replay_total(self, before: list[int], times: dict[int, Sequence[int]]) -> None:
        """Kafka's total quota updates during pass 3: member ``m`` got its tasks at the pick
        positions ``times[m]`` (ascending), from a count of ``before[m]``; the quota drops
        when a member's count reaches it."""
        quota, cap, left = self.total_quota, self.total_cap, self.total_left

        def due(at: int) -> list[tuple[int, int]]:
            out = []
            for m, mine in times.items():
                start = before[m]
                c = start + (bisect_right(mine, at) if at >= 0 else 0)
                if c < quota <= start + len(mine):
                    out.append((mine[quota - start - 1], m))
            heapify(out)
            return out

        events = due(-1) if quota > 0 else []
        while events:
            at, _ = heappop(events)
            cap -= 1
            left -= quota
            new = _tasks_per_member(left, cap)
            if new != quota:
                quota = new
                events = due(at) if quota > 0 else []
        self.total_quota, self.total_cap, self.total_left = quota, cap, left

    # -- standby tasks -------------------------------------------------------------------

    def assign_standby(self) -> None:
        """Standby tasks (:attr:`active` has every task's member by now)."""
        replicas = self.replicas
        if self.any_prev_active or self.any_prev_standby:
            tasks = self._stateful_by_partition()
            if replicas == 1 and self.holders is None:
                self._queued_standby_one(self._sticky_standby_one(tasks))
                return
            queued = self._sticky_standby(tasks)
            queued.sort(reverse=True)
        else:  # no history: everything is queued, in descending task order
            bases, sizes = self.bases, self.sizes
            tasks = list(chain.from_iterable(
                range(bases[s] + sizes[s] - 1, bases[s] - 1, -1) for s in reversed(self.stateful)))
            held = map(self.member_process.__getitem__, map(self.active.__getitem__, tasks))
            if replicas == 1:
                self._queued_standby_one(list(zip(tasks, held, strict=True)))
                return
            queued = [(t, replicas, [p]) for t, p in zip(tasks, held, strict=True)]
        if replicas == 1:
            self._queued_standby_one([(t, holding[0]) for t, _, holding in queued])
        elif queued:
            self._queued_standby(queued)

    def _stateful_by_partition(self) -> list[int]:
        """The stateful tasks in descending (partition, subtopology id) order."""
        stateful, sizes, bases = self.stateful, self.sizes, self.bases
        width = len(stateful)
        size = sizes[stateful[0]]
        if all(sizes[s] == size for s in stateful):
            order = [0] * (width * size)
            for j, s in enumerate(stateful):
                order[j::width] = range(bases[s], bases[s] + size)
            order.reverse()
            return order
        order = list(chain.from_iterable(range(bases[s], bases[s] + sizes[s]) for s in stateful))
        order.sort(key=self.keys().__getitem__, reverse=True)
        return order

    def _sticky_standby(self, tasks: list[int]) -> list[tuple[int, int, list[int]]]:
        """Standby tasks in descending (partition, subtopology id) order, replica by replica:
        to the previous active member if its process does not hold the task and it is below
        the total quota, else to the least loaded previous standby member whose process does
        not hold it, if below the quota; else the remaining replicas are queued, with the
        processes holding the task."""
        replicas, active = self.replicas, self.active
        prev_active, holder, holders = self.prev_active, self.holder, self.holders
        count, load, process_tasks, capacity = (
            self.count, self.load, self.process_tasks, self.capacity)
        member_process, standby_of = self.member_process, self.standby_of
        least_loaded_previous = self._least_loaded_previous
        quota, cap, left = self.total_quota, self.total_cap, self.total_left
        queued: list[tuple[int, int, list[int]]] = []
        for t in tasks:
            holding = [member_process[active[t]]]
            a = prev_active[t]
            previous: list[int] | None
            if holders is not None:
                previous = holders.get(t)
            else:
                h = holder[t]
                previous = None if h < 0 else [h]
            if a < 0 and previous is None:
                queued.append((t, replicas, holding))
                continue
            for i in range(replicas):
                if a >= 0 and count[a] < quota and member_process[a] not in holding:
                    m = a
                elif previous:
                    m = least_loaded_previous(previous, holding)
                    if m >= 0 and count[m] >= quota:
                        m = -1
                else:
                    m = -1
                if m < 0:
                    queued.append((t, replicas - i, holding))
                    break
                p = member_process[m]
                standby_of[m].append(t)
                holding.append(p)
                c = count[m] = count[m] + 1
                k = process_tasks[p] = process_tasks[p] + 1
                load[p] = k / capacity[p]
                if c == quota:
                    cap -= 1
                    left -= c
                    quota = _tasks_per_member(left, cap)
        self.total_quota, self.total_cap, self.total_left = quota, cap, left
        return queued

    def _sticky_standby_one(self, tasks: list[int]) -> list[tuple[int, int]]:
        """:meth:`_sticky_standby` for one replica, when every task had at most one previous
        standby member (no load comparison: loads are refreshed at the end). Returns the
        queue: (task, process holding it), in descending task order."""
        count, member_process, standby_of = self.count, self.member_process, self.standby_of
        quota, cap, left = self.total_quota, self.total_cap, self.total_left
        queued: list[tuple[int, int]] = []
        held = map(member_process.__getitem__, map(self.active.__getitem__, tasks))
        previous_active = map(self.prev_active.__getitem__, tasks)
        previous_standby = map(self.holder.__getitem__, tasks)
        for t, held_by, a, h in zip(tasks, held, previous_active, previous_standby,
                                    strict=True):
            if a >= 0 and member_process[a] != held_by and count[a] < quota:
                m = a
            elif h >= 0 and member_process[h] != held_by and count[h] < quota:
                m = h
            else:
                queued.append((t, held_by))
                continue
            standby_of[m].append(t)
            c = count[m] = count[m] + 1
            if c == quota:
                cap -= 1
                left -= c
                quota = _tasks_per_member(left, cap)
        self.total_quota, self.total_cap, self.total_left = quota, cap, left
        self.process_tasks = [sum(map(count.__getitem__, ms)) for ms in self.process_members]
        self._refresh_loads()
        queued.sort(reverse=True)
        return queued

    def _queued_standby(self, queued: list[tuple[int, int, list[int]]]) -> None:
        """The queue, in descending (subtopology id, partition) order: each replica to the
        least loaded process not holding the task (Kafka's
        ``assignStandbyToMemberWithLeastLoad``), within it to its member with the fewest
        tasks. Processes passed over keep their place: their slots wait in ``deferred``
        (all of which come before the slots not reached yet). The total quota is not read
        after this."""
        processes = len(self.capacity)
        wanted = sum(r for _, r, _ in queued) + processes
        slots = _Slots(self.process_tasks, self.capacity)
        slots.extend(wanted)
        procs, pos = slots.procs, 0
        deferred: list[int] = []
        picks: list[list[int]] = [[] for _ in range(processes)]
        replicas = self.replicas
        for t, remaining, holding in queued:
            for i in range(remaining):
                if len(holding) >= processes:
                    self._warn(t, replicas - i)
                    break
                chosen = -1
                for d, p in enumerate(deferred):
                    if p not in holding:
                        chosen = p
                        del deferred[d]
                        break
                while chosen < 0:
                    if pos == len(procs):
                        slots.extend(wanted)
                        procs, pos = slots.procs, 0
                    p = procs[pos]
                    pos += 1
                    if p in holding:
                        deferred.append(p)
                    else:
                        chosen = p
                picks[chosen].append(t)
                holding.append(chosen)
        self._give_standby(picks)

    def _queued_standby_one(self, queued: list[tuple[int, int]]) -> None:
        """:meth:`_queued_standby` for one replica: ``queued`` has (task, the process holding
        it)."""
        processes = len(self.capacity)
        if processes == 1:
            for t, _ in queued:
                self._warn(t, 1)
            return
        wanted = len(queued) + processes
        slots = _Slots(self.process_tasks, self.capacity)
        slots.extend(wanted)
        procs, pos, end = slots.procs, 0, len(slots.procs)
        deferred: list[int] = []
        picks: list[list[int]] = [[] for _ in range(processes)]
        for t, held_by in queued:
            if deferred:
                for d, p in enumerate(deferred):
                    if p != held_by:
                        del deferred[d]
                        picks[p].append(t)
                        break
                else:
                    p = -1
                if p >= 0:
                    continue
            while True:
                if pos == end:
                    slots.extend(wanted)
                    procs, pos, end = slots.procs, 0, len(slots.procs)
                p = procs[pos]
                pos += 1
                if p != held_by:
                    break
                deferred.append(p)
            picks[p].append(t)
        self._give_standby(picks)

    def _give_standby(self, picks: list[list[int]]) -> None:
        """The queued standbys each process got, to its members."""
        standby_of, process_tasks = self.standby_of, self.process_tasks
        for p, got in enumerate(picks):
            if got:
                process_tasks[p] += len(got)
                for m, mine in self._split(p, got):
                    standby_of[m].extend(mine)
        self._refresh_loads()

    def _warn(self, t: int, missing: int) -> None:
        s = bisect_right(self.bases, t) - 1
        log.warning(_NO_CAPACITY, missing, self.replicas, self.sub_ids[s], t - self.bases[s])

    # -- output --------------------------------------------------------------------------

    def _grouped(self, tasks: list[int]) -> Tasks:
        """Ascending task indexes as subtopology id -> partitions."""
        if not tasks:
            return {}
        sub_id = self.task_sub_id
        if len(tasks) == 1 or sub_id[tasks[0]] != sub_id[tasks[1]]:
            # maybe one task per subtopology (round robin): C loops
            out = dict(zip(map(sub_id.__getitem__, tasks),
                           map(self.task_single.__getitem__, tasks), strict=True))
            if len(out) == len(tasks):
                return out
        if self.task_sub is None:
            sizes = self.sizes
            self.task_sub = list(chain.from_iterable(map(repeat, range(len(sizes)), sizes)))
            self.task_part = list(chain.from_iterable(map(range, sizes)))
        sub_ids, task_sub, task_part = self.sub_ids, self.task_sub, self.task_part
        return {
            sub_ids[s]: frozenset(map(task_part.__getitem__, run))
            for s, run in groupby(tasks, task_sub.__getitem__)
        }

    def result(self) -> TaskAssignment:
        members = self.members
        if not members:
            return TaskAssignment({})
        if self.task_count:
            self.sticky_active()
            self.promote_standbys()
            self.least_loaded_active()
            if self.replicas > 0 and self.stateful:
                self.assign_standby()
        sizes, sub_ids = self.sizes, self.sub_ids
        self.task_sub_id = list(chain.from_iterable(map(repeat, sub_ids, sizes)))
        # one frozenset per partition number, shared by every member holding a single
        # task of a subtopology (immutable, so sharing is safe; pickling dedupes them)
        singletons = [frozenset((p,)) for p in range(max(sizes, default=0))]
        self.task_single = list(chain.from_iterable(singletons[:n] for n in sizes))
        out: dict[str, MemberTaskAssignment] = {}
        grouped = self._grouped
        for m, member in enumerate(members):
            active = self.active_of[m]
            active.sort()
            standby = self.standby_of[m]
            standby.sort()
            out[member.member_id] = MemberTaskAssignment(grouped(active), grouped(standby), {})
        return TaskAssignment(out)
