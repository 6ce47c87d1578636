"""The consumer group (KIP-848) and its members, as their records say.

A :class:`ConsumerGroup` is rebuilt only by replaying records (see ``consumer.replay``); the
heartbeat handler reads it and returns records, it never changes it. Members are immutable
values: reconciliation returns a new member.
"""

from __future__ import annotations

import sys
import uuid
from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from enum import IntEnum
from typing import Any

from coordinator.groups.common.assignor_job import TargetIndexCache
from coordinator.groups.modern.members import ModernGroupMember
from coordinator.groups.modern.state import GroupState
from coordinator.groups.modern.subscription import SubscribedTopic
from protocol import ErrorCode

from .assignment_forms import EMPTY, Assignment, AssignmentForms

LEAVE_GROUP_MEMBER_EPOCH = -1
LEAVE_GROUP_STATIC_MEMBER_EPOCH = -2
EMPTY_ASSIGNMENT_EPOCH = 1
"""Seed 000: epoch 1 of a new group is reserved for the empty target assignment."""
FIRST_GROUP_EPOCH = 2
"""Seed 000: new groups start at group epoch 2."""


class MemberState(IntEnum):
    """Kafka's ``MemberState`` byte values (stored in the current assignment record)."""

    STABLE = 0
    UNREVOKED_PARTITIONS = 1
    UNRELEASED_PARTITIONS = 2
    UNKNOWN = 127


def is_subset(owned: Iterable[tuple[uuid.UUID, Iterable[int]]] | None,
              assignment: Assignment) -> bool:
    """Kafka's ``isSubset``: every owned partition is in ``assignment`` (False when unknown)."""
    if owned is None:
        return False
    for topic_id, partitions in owned:
        held = assignment.get(topic_id)
        if held is None or not set(partitions) <= held:
            return False
    return True


def partition_count(assignment: Assignment) -> int:
    return sum(len(p) for p in assignment.values())


@dataclass(frozen=True, slots=True)
class ClassicMemberInfo:
    """What a member using the classic protocol (JoinGroup/SyncGroup) adds: Kafka's
    ``ClassicMemberMetadata`` (its session timeout and supported protocols)."""

    session_timeout_ms: int
    protocols: tuple[tuple[str, bytes], ...] = ()

    def protocol_names(self) -> list[str]:
        return [name for name, _ in self.protocols]


_INTERNED_LIMIT = 4096
_interned_topic_lists: dict[tuple[str, ...], tuple[str, ...]] = {}


def interned_topic_names(names: Iterable[str]) -> tuple[str, ...]:
    """A subscription's topic names, sorted and without repeats, as one shared object per
    distinct list: a large group's members subscribe to a few lists of hundreds of topics, and
    comparing equal lists held by different objects costs a string comparison per topic."""
    key = tuple(sorted(set(names)))
    found = _interned_topic_lists.get(key)
    if found is not None:
        return found
    if len(_interned_topic_lists) >= _INTERNED_LIMIT:
        _interned_topic_lists.clear()
    key = tuple(sys.intern(name) for name in key)
    _interned_topic_lists[key] = key
    return key


@dataclass(frozen=True, slots=True)
class ConsumerGroupMember(ModernGroupMember):
    state: MemberState = MemberState.STABLE
    instance_id: str | None = None
    rack_id: str | None = None
    rebalance_timeout_ms: int = -1
    client_id: str = ""
    client_host: str = ""
    subscribed_topic_names: tuple[str, ...] = ()
    subscribed_topic_regex: str | None = None
    server_assignor: str | None = None
    assigned_partitions: Assignment = field(default_factory=dict)
    partitions_pending_revocation: Assignment = field(default_factory=dict)
    classic: ClassicMemberInfo | None = None
    """Set for a classic protocol member of a mixed group."""

    @property
    def uses_classic_protocol(self) -> bool:
        return self.classic is not None

    def is_reconciled_to(self, target_epoch: int) -> bool:
        return self.state is MemberState.STABLE and self.member_epoch == target_epoch


class ConsumerGroup:
    """State of one consumer group; only ``consumer.replay`` changes it."""

    group_type = "consumer"
    """What ListGroups reports (``groups.admin`` reads it)."""

    def __init__(self, group_id: str) -> None:
        self.group_id = group_id
        self.group_epoch = 0
        self.assignment_epoch = 0
        self.assignment_timestamp = 0
        """When the last target assignment computation finished (0: unknown)."""
        self.subscription_metadata: dict[str, SubscribedTopic] = {}
        self.members: dict[str, ConsumerGroupMember] = {}
        self.static_members: dict[str, str] = {}
        """Instance id -> member id: of the members that carry the instance id, the least
        member id (after a batch, one member carries it; within a replacement's batch, the old
        and the new), so the map does not depend on the order records are replayed in (a
        snapshot replays them in key order)."""
        self._instance_claims: dict[str, set[str]] = {}
        """Instance id -> the ids of the members that carry it."""
        self.target: dict[str, Assignment] = {}
        """Target assignment by member id."""
        self.held: dict[str, Any] = {}
        """Member id -> ``modern.deferred.Hold``: partitions of a member that left, held
        unassigned (ConsumerGroupHeldPartitions records, ``imbalance``)."""
        self.partition_owners: dict[tuple[uuid.UUID, int], str] = {}
        """(topic id, partition) -> id of the member that owns it or has yet to revoke it (the
        partition's epoch is that member's epoch)."""
        self.subscribed_topic_counts: Counter[str] = Counter()
        self.subscribed_regex_counts: Counter[str] = Counter()
        """Regex -> how many members subscribe with it."""
        self.resolved_regexes: dict[str, Any] = {}
        """Regex -> ``consumer_regex.ResolvedRegex`` (ConsumerGroupRegularExpression records)."""
        self.regex_refresh_ms = 0
        """When the regexes were last resolved (the newest record's timestamp)."""
        self.assignor_run: int | None = None
        self.run_started_ms = 0
        """When the run in flight started (in memory: ``pacing``'s estimate)."""
        self.last_run_ms: int | None = None
        """How long the last offloaded run took, start to install (in memory)."""
        self.regex_resolution: int | None = None
        """The background regex resolution in flight, if any (in memory, ``regex``)."""
        self.regex_rerun = False
        """Topics changed while it ran: another resolution follows it (in memory)."""
        self.first_join_ms = 0
        """When a new group's first member joined (``pacing``'s window; in memory, 0 until a
        second member joins in the window)."""
        self.expedited: tuple[int, int, dict[str, int]] = (0, 0, {})
        """(assignment epoch, shortened heartbeat intervals handed out since, and by member):
        ``pacing``'s bounds, in memory."""
        self.client_assignors: dict[str, tuple[Any, ...]] = {}
        """Member id -> the client-side assignors it lists (``client_selection.ClientAssignor``s,
        its order of preference; ConsumerGroupMemberClientAssignors records, seed 003)."""
        self.client_assignment: Any = None
        """Who computed the target with which client-side assignor (the
        ConsumerGroupClientAssignment record), if a client-side assignor computed it."""
        self.client_computation: Any = None
        """The client-side computation in flight (``client_selection.ClientComputation``): in
        memory, not a record."""
        self.client_fallback_epoch = 0
        """The group epoch whose target the server-side assignor computes because no member
        installed one in time (in memory)."""
        self.job_targets = TargetIndexCache()  # in memory only: speeds up offloaded jobs
        self.assignment_forms = AssignmentForms()  # in memory only: unchanged = same object
        """The offloaded assignor run in flight (seed 000), if any: in memory, not a record."""

    # --- reads -------------------------------------------------------------------------------
    def member(self, member_id: str) -> ConsumerGroupMember | None:
        return self.members.get(member_id)

    def static_member(self, instance_id: str | None) -> ConsumerGroupMember | None:
        if instance_id is None:
            return None
        member_id = self.static_members.get(instance_id)
        return None if member_id is None else self.members.get(member_id)

    def target_of(self, member_id: str) -> Assignment:
        return self.target.get(member_id, EMPTY)

    def current_partition_epoch(self, topic_id: uuid.UUID, partition: int) -> int:
        owner = self.partition_owners.get((topic_id, partition))
        member = None if owner is None else self.members.get(owner)
        return -1 if member is None else member.member_epoch

    def effective_target(self, member_id: str) -> tuple[int, Assignment]:
        """(epoch, assignment) to reconcile towards: epoch 1 and nothing when no target was
        ever computed (seed 000)."""
        if self.assignment_epoch == 0:
            return EMPTY_ASSIGNMENT_EPOCH, EMPTY
        return self.assignment_epoch, self.target_of(member_id)

    @property
    def state(self) -> GroupState:
        if not self.members:
            return GroupState.EMPTY
        if self.group_epoch > self.assignment_epoch:
            return GroupState.ASSIGNING
        for member in self.members.values():
            if not member.is_reconciled_to(self.assignment_epoch):
                return GroupState.RECONCILING
        return GroupState.STABLE

    # --- offsets -----------------------------------------------------------------------------
    def validate_offset_commit(self, commit: Any) -> ErrorCode | None:
        """Kafka's ConsumerGroup.validateOffsetCommit (``commit`` is an ``offsets.OffsetCommit``):
        without an epoch only an empty group takes commits; otherwise the member must exist,
        use OffsetCommit v9+ and name its current member epoch."""
        if commit.generation_id < 0 and not self.members:
            return None
        member = self.members.get(commit.member_id)
        if member is None:
            return ErrorCode.unknown_member_id
        if member.classic is not None:
            # A classic member of a mixed group commits with its generation (member epoch).
            if commit.generation_id != member.member_epoch:
                return ErrorCode.illegal_generation
            return None
        if commit.api_version < 9:
            return ErrorCode.unsupported_version
        if commit.generation_id != member.member_epoch:
            return ErrorCode.stale_member_epoch
        return None

    def validate_offset_fetch(self, member_id: str | None, member_epoch: int) -> ErrorCode | None:
        """Kafka's ConsumerGroup.validateOffsetFetch: epoch -1 (admin clients) always reads;
        otherwise the member must exist at that epoch."""
        if member_epoch == -1 or member_id is None:
            return None
        member = self.members.get(member_id)
        if member is None:
            return ErrorCode.unknown_member_id
        if member_epoch != member.member_epoch:
            return ErrorCode.stale_member_epoch
        return None

    # --- replay helpers ----------------------------------------------------------------------
    def put_member(self, member: ConsumerGroupMember) -> None:
        old = self.members.get(member.member_id)
        if old is not None:
            if old.subscribed_topic_names != member.subscribed_topic_names:
                self._count_topics(old.subscribed_topic_names, -1)
                self._count_topics(member.subscribed_topic_names, 1)
            if old.subscribed_topic_regex != member.subscribed_topic_regex:
                self._count_regex(old.subscribed_topic_regex, -1)
                self._count_regex(member.subscribed_topic_regex, 1)
            if old.instance_id is not None and old.instance_id != member.instance_id:
                self._unclaim(old.instance_id, old.member_id)
        else:
            self._count_topics(member.subscribed_topic_names, 1)
            self._count_regex(member.subscribed_topic_regex, 1)
        if member.instance_id is not None:
            claims = self._instance_claims.setdefault(member.instance_id, set())
            claims.add(member.member_id)
            self.static_members[member.instance_id] = min(claims)
        self.members[member.member_id] = member

    def drop_member(self, member_id: str) -> None:
        old = self.members.pop(member_id, None)
        if old is None:
            return
        self.assignment_forms.forget(member_id)
        self.client_assignors.pop(member_id, None)
        self._count_topics(old.subscribed_topic_names, -1)
        self._count_regex(old.subscribed_topic_regex, -1)
        if old.instance_id is not None:
            self._unclaim(old.instance_id, member_id)

    def _unclaim(self, instance_id: str, member_id: str) -> None:
        claims = self._instance_claims.get(instance_id)
        if claims is None:
            return
        claims.discard(member_id)
        if claims:
            self.static_members[instance_id] = min(claims)
        else:
            del self._instance_claims[instance_id]
            self.static_members.pop(instance_id, None)

    def _count_topics(self, names: Iterable[str], delta: int) -> None:
        _adjust_counts(self.subscribed_topic_counts, names, delta)

    def _count_regex(self, regex: str | None, delta: int) -> None:
        if regex:
            _adjust_counts(self.subscribed_regex_counts, (regex,), delta)

    def set_partition_epochs(self, old: ConsumerGroupMember | None,
                             new: ConsumerGroupMember | None) -> None:
        """Record which member owns (or has yet to revoke) each partition, as ``old`` becomes
        ``new``. A member whose partitions are the same objects as before (an epoch bump: see
        ``assignment_forms``) changes nothing: a partition's epoch is read from its owner."""
        if (old is not None and new is not None and old.member_id == new.member_id
                and old.assigned_partitions is new.assigned_partitions
                and old.partitions_pending_revocation is new.partitions_pending_revocation):
            return
        owners = self.partition_owners
        if old is not None:
            for assignment in (old.assigned_partitions, old.partitions_pending_revocation):
                for topic_id, partitions in assignment.items():
                    for p in partitions:
                        if owners.get((topic_id, p)) == old.member_id:
                            del owners[(topic_id, p)]
        if new is not None:
            for assignment in (new.assigned_partitions, new.partitions_pending_revocation):
                for topic_id, partitions in assignment.items():
                    for p in partitions:
                        owners[(topic_id, p)] = new.member_id


def _adjust_counts(counts: Counter[str], keys: Iterable[str], delta: int) -> None:
    """Adjust the subscriber counts of ``keys`` (topics or regexes); one nobody subscribes to
    is dropped (only these keys are touched, not the whole table)."""
    for key in keys:
        count = counts[key] + delta
        if count > 0:
            counts[key] = count
        else:
            counts.pop(key, None)
