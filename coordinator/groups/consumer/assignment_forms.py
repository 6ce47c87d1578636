"""Assignments and their record form (``TopicPartitions`` tuples), and a per-group memo of both.

A member whose partitions did not change is written again at every epoch bump (a
ConsumerGroupCurrentMemberAssignment record with the same partitions). Keeping each member's last
assignment next to the tuple made from it lets that record reuse the tuple, and its replay give
back the very same assignment object: the group then tells "unchanged" by identity, instead of
rebuilding, comparing and re-indexing ~50 partitions (dicts keyed by ``uuid.UUID``, whose hash is
Python code) on every heartbeat of a large group.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Mapping
from typing import Any

from storage.codec import EncodedOnce
from storage.records import TopicPartitions

Assignment = Mapping[uuid.UUID, frozenset[int]]
"""Partitions by topic id; topics with no partition are left out."""

Form = tuple[TopicPartitions, ...]
EMPTY: Assignment = {}
"""The empty assignment (one shared object: never mutated)."""


def assignment_of(pairs: Iterable[tuple[uuid.UUID, Iterable[int]]]) -> dict[uuid.UUID,
                                                                          frozenset[int]]:
    """An assignment from (topic id, partitions) pairs, merging repeats, dropping empties."""
    out: dict[uuid.UUID, frozenset[int]] = {}
    for topic_id, partitions in pairs:
        merged = out.get(topic_id, frozenset()) | frozenset(partitions)
        if merged:
            out[topic_id] = merged
    return out


def topic_partitions(assignment: Assignment) -> Form:
    # By topic id (its integer: the order of the text form, without formatting each id).
    return tuple(TopicPartitions(topic_id=topic_id, partitions=tuple(sorted(partitions)))
                 for topic_id, partitions in sorted(assignment.items(), key=by_topic_id)
                 if partitions)


def by_topic_id(item: tuple[uuid.UUID, Any]) -> int:
    return item[0].int


class AssignmentForms:
    """Each member's last (assignment, record form) pair; in memory only, one entry per member
    (the group forgets a member's entry when it drops the member)."""

    def __init__(self) -> None:
        self._by_member: dict[str, tuple[Assignment, Form]] = {}

    def form(self, member_id: str, assignment: Assignment) -> Form:
        """The record form of the member's ``assignment``: the same tuple as last time when
        ``assignment`` is the same object (a tuple that keeps its encoding, so the record is
        not encoded partition by partition again either)."""
        if not assignment:
            return ()
        cached = self._by_member.get(member_id)
        if cached is not None and cached[0] is assignment:
            return cached[1]
        form = EncodedOnce(topic_partitions(assignment))
        self._by_member[member_id] = (assignment, form)
        return form

    def assignment(self, member_id: str, form: Form) -> Assignment:
        """The assignment a record's ``form`` says (the object the form was made from, when the
        record was built by :meth:`form` for this member)."""
        if not form:
            return EMPTY
        cached = self._by_member.get(member_id)
        if cached is not None and cached[1] is form:
            return cached[0]
        assignment = assignment_of((tp.topic_id, tp.partitions) for tp in form)
        self._by_member[member_id] = (assignment, form)
        return assignment

    def forget(self, member_id: str) -> None:
        self._by_member.pop(member_id, None)
