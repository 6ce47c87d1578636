"""Input and output of a streams group's task assignor (KIP-1071 ``TaskAssignor``).

A *task* is ``(subtopology id, partition)`` with ``partition`` in ``0 .. num_tasks - 1`` of
its subtopology. Tasks are given out in three roles: active, standby and warm-up.

Everything here is a frozen dataclass of strings, ints, tuples, dicts and frozensets, so a
spec pickles cheaply into a worker process and back. Nothing is validated when a record is
built (building stays cheap); :meth:`TaskAssignmentSpec.validate` checks what the assignor
relies on, and the assignor calls it.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import TypeAlias

Tasks: TypeAlias = Mapping[str, frozenset[int]]
"""Tasks of one role: subtopology id -> partitions."""


class TaskAssignmentSpecError(ValueError):
    """The spec cannot be assigned (duplicate ids, negative counts)."""


@dataclass(frozen=True, slots=True)
class TaskMember:
    """One member of a streams group, as the assignor sees it (Kafka's
    ``AssignmentMemberSpec`` without the fields 4.3 never reads)."""

    member_id: str
    process_id: str
    """Members with the same process id are threads of one Streams instance: a process never
    holds a task twice (active and standby, or two standbys)."""
    active: Tasks = field(default_factory=dict)
    """The member's previous *target* active tasks (not what it currently owns)."""
    standby: Tasks = field(default_factory=dict)
    """The member's previous target standby tasks."""
    warmup: Tasks = field(default_factory=dict)
    """The member's previous target warm-up tasks (Kafka 4.3's assignor ignores them)."""


@dataclass(frozen=True, slots=True)
class SubtopologyTasks:
    """One configured subtopology: its tasks are partitions ``0 .. num_tasks - 1``."""

    subtopology_id: str
    num_tasks: int
    stateful: bool
    """Has at least one changelog topic; only stateful tasks get standbys."""


@dataclass(frozen=True, slots=True)
class TaskAssignmentSpec:
    """What the task assignor computes a target from (Kafka's ``GroupSpec`` plus its
    ``TopologyDescriber``). Order of members and subtopologies does not matter."""

    members: tuple[TaskMember, ...]
    subtopologies: tuple[SubtopologyTasks, ...]
    num_standby_replicas: int = 0
    """``num.standby.replicas`` (``assignmentConfigs``): standbys wanted per stateful task."""

    def validate(self) -> None:
        """Raise :class:`TaskAssignmentSpecError` on duplicate member or subtopology ids or a
        negative count. Previous tasks outside the topology are not errors (ignored)."""
        if self.num_standby_replicas < 0:
            raise TaskAssignmentSpecError(
                f"num.standby.replicas must be >= 0, got {self.num_standby_replicas}")
        member_ids = {m.member_id for m in self.members}
        if len(member_ids) != len(self.members):
            raise TaskAssignmentSpecError("duplicate member id")
        subtopology_ids = set()
        for sub in self.subtopologies:
            if sub.num_tasks < 0:
                raise TaskAssignmentSpecError(
                    f"subtopology {sub.subtopology_id!r} has {sub.num_tasks} tasks")
            subtopology_ids.add(sub.subtopology_id)
        if len(subtopology_ids) != len(self.subtopologies):
            raise TaskAssignmentSpecError("duplicate subtopology id")


@dataclass(frozen=True, slots=True)
class MemberTaskAssignment:
    """One member's new target (Kafka's ``MemberAssignment``): subtopology ids in ascending
    order, only subtopologies with at least one task."""

    active: Tasks = field(default_factory=dict)
    standby: Tasks = field(default_factory=dict)
    warmup: Tasks = field(default_factory=dict)
    """Always empty from Kafka 4.3's assignor."""


EMPTY_MEMBER_ASSIGNMENT = MemberTaskAssignment()


@dataclass(frozen=True, slots=True)
class TaskAssignment:
    """The assignor's answer: every member of the spec (in member-id order) -> its target."""

    members: Mapping[str, MemberTaskAssignment]

    def member(self, member_id: str) -> MemberTaskAssignment:
        """One member's target (empty if the member is unknown)."""
        return self.members.get(member_id, EMPTY_MEMBER_ASSIGNMENT)
