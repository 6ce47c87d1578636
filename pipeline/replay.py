"""Replay one group's records (in log order) into the rows of the group tables.

Pure Python, no Spark: the ``digest`` view of the source (:func:`pipeline.digest.replayed_rows`)
runs :func:`replay_group` once per group, in the task that read the group's coordinator
partition. Rows are plain dicts keyed by the column names of :mod:`pipeline.outputs`.

Definitions:
- an *assignment run* is a target assignment metadata record (consumer, share and streams
  groups) or a classic GroupMetadata record (a generation's assignment, or the group becoming
  Empty). A share group's last member leaving writes an empty target with ``Timestamp`` 0 (no
  assignor ran): a run of 0 members whose time is the record's;
- a partition *moved* if its owners in a run's target differ from its owners in the previous
  run's target (a partition newly assigned or no longer assigned has not moved). A consumer or
  classic group's partition has one owner; a share group's may have several (they share it);
- a streams group is assigned *tasks* (subtopology id, partition) instead of partitions: its
  runs' ``partitions`` and ``partitions_moved`` count active tasks (one owner each), and
  ``standby_tasks`` / ``standby_tasks_moved`` its standby tasks (a task may have several
  standby owners: moved if that set changed); warm-up tasks are not counted (Kafka 4.3 assigns
  none);
- a *rebalance* of a consumer, share or streams group starts at a group epoch bump and completes
  when the target of that epoch is computed and every member is Stable at that epoch or later (a
  share member is always Stable: it takes its target at once); a newer bump first supersedes it;
  all members gone first makes it ``empty`` (the last member leaving a consumer or streams group
  bumps the epoch and writes no target). Classic groups' logs hold only the end of each
  generation, so their rebalances have no start and no duration.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any, ClassVar

from pipeline.consumer_protocol import decode_assignment, decode_subscription

Row = dict[str, Any]
TopicPartition = tuple[str, int]
Owner = dict[TopicPartition, str]
Owners = dict[TopicPartition, frozenset[str]]

CONSUMER = "consumer"
SHARE = "share"
STREAMS = "streams"
CLASSIC = "classic"
GROUP_TYPES = (CONSUMER, SHARE, STREAMS, CLASSIC)
"""The values of the group tables' ``group_type`` column."""
STABLE = 0
STREAMS_STABLE = 1  # the streams MemberState byte (KIP-1071's STABLE is 1, not 0)


def moved(before: Owner, after: Owner) -> int:
    """Partitions owned in both targets, by different members."""
    return sum(1 for tp, owner in after.items() if before.get(tp, owner) != owner)


def moved_owners(before: Owners, after: Owners) -> int:
    """Partitions assigned in both targets, to different sets of members (a share group's
    partition may have several; a consumer group's has one, and this is :func:`moved`)."""
    return sum(1 for tp, owners in after.items() if before.get(tp, owners) != owners)


def _owners(assignment: dict[str, list[TopicPartition]]) -> Owner:
    return {tp: member for member, tps in assignment.items() for tp in tps}


def _owner_sets(assignment: dict[str, list[TopicPartition]]) -> Owners:
    owners: dict[TopicPartition, set[str]] = {}
    for member, tps in assignment.items():
        for tp in tps:
            owners.setdefault(tp, set()).add(member)
    return {tp: frozenset(members) for tp, members in owners.items()}


def _flatten(topic_partitions: Iterable[dict[str, Any]] | None) -> list[tuple[str, int]]:
    return [(tp["topic_id"], p) for tp in topic_partitions or () for p in tp["partitions"]]


def _flatten_tasks(tasks: Iterable[dict[str, Any]] | None) -> list[tuple[str, int]]:
    """Streams tasks as (subtopology id, partition)."""
    return [(t["subtopology_id"], p) for t in tasks or () for p in t["partitions"]]


@dataclass
class GroupTables:
    runs: list[Row] = field(default_factory=list)
    timeline: list[Row] = field(default_factory=list)
    rebalances: list[Row] = field(default_factory=list)
    state: list[Row] = field(default_factory=list)


@dataclass
class _Rebalance:
    epoch: int
    started_ms: int
    target_ms: int | None = None


class _ConsumerReplay:
    """A KIP-848 consumer group's records; :class:`_ShareReplay` and :class:`_StreamsReplay`
    reuse it for share and streams groups, whose records play the same roles under
    ``ShareGroup`` and ``StreamsGroup`` names."""

    GROUP_TYPE: ClassVar[str] = CONSUMER
    STABLE_STATE: ClassVar[int] = STABLE
    METADATA: ClassVar[str] = "ConsumerGroupMetadata"
    MEMBER_METADATA: ClassVar[str] = "ConsumerGroupMemberMetadata"
    CURRENT_ASSIGNMENT: ClassVar[str] = "ConsumerGroupCurrentMemberAssignment"
    TARGET_MEMBER: ClassVar[str] = "ConsumerGroupTargetAssignmentMember"
    TARGET_METADATA: ClassVar[str] = "ConsumerGroupTargetAssignmentMetadata"

    def __init__(self, store: str, group_id: str, out: GroupTables) -> None:
        self.base = {"store": store, "group_id": group_id, "group_type": self.GROUP_TYPE}
        self.out = out
        self.epoch: int | None = None
        self.target: dict[str, list[TopicPartition]] = {}
        self.previous_owner: Owners | None = None
        self.previous_run_ms: int | None = None
        self.bump_ms: int | None = None
        self.bumped_at: dict[int, int] = {}
        """When each group epoch not yet assigned was bumped to (a target computed for an epoch
        may be written after a later bump: an offloaded run installed late)."""
        self.members: dict[str, list[str]] = {}  # member -> subscribed topics
        self.member_epoch: dict[str, tuple[int, int]] = {}  # member -> (epoch, state)
        self.target_epoch = -1
        self.open: _Rebalance | None = None
        self.last_ms = 0
        self.deleted = False

    def _event(self, member: str, event: str, epoch: int | None, row: Row) -> None:
        self.out.timeline.append({**self.base, "member_id": member, "event": event,
                                  "epoch": epoch, "timestamp": row["timestamp"],
                                  "offset": row["offset"]})

    def _close(self, status: str, now: int | None) -> None:
        rb = self.open
        if rb is None:
            return
        self.open = None
        done = now if status == "completed" else None
        self.out.rebalances.append({
            **self.base, "epoch": rb.epoch, "started_ms": rb.started_ms,
            "target_ms": rb.target_ms, "completed_ms": done,
            "duration_ms": None if done is None else done - rb.started_ms,
            "members": len(self.members), "status": status})

    def _check(self, now: int) -> None:
        rb = self.open
        if rb is None:
            return
        if not self.members:
            self._close("empty", now)
            return
        if self.target_epoch < rb.epoch:
            return
        for member in self.members:
            epoch, state = self.member_epoch.get(member, (-1, -1))
            if epoch < rb.epoch or state != self.STABLE_STATE:
                return
        self._close("completed", now)

    def apply(self, row: Row) -> None:
        kind = row["type"]
        now = row["timestamp"]
        self.last_ms = now
        member = row["member_id"]
        tomb = row["tombstone"]
        if kind == self.METADATA:
            if tomb:
                for m in list(self.members):
                    self._event(m, "left", None, row)
                self.members.clear()
                self.bumped_at.clear()
                self._close("empty", now)
                self.deleted = True
                return
            self.deleted = False
            epoch = row["epoch"]
            if self.epoch is None or epoch > self.epoch:
                self._close("superseded", None)
                self.open = _Rebalance(epoch, now)
                self.bump_ms = now
                self.bumped_at[epoch] = now
            self.epoch = epoch
        elif kind == self.MEMBER_METADATA:
            if tomb:
                if self.members.pop(member, None) is not None:
                    self._event(member, "left", None, row)
                self.member_epoch.pop(member, None)
            else:
                if member not in self.members:
                    self._event(member, "joined", None, row)
                self.members[member] = list(row["subscribed_topics"] or ())
        elif kind == self.CURRENT_ASSIGNMENT:
            if tomb:
                self.member_epoch.pop(member, None)
            else:
                epoch = row["epoch"]
                before = self.member_epoch.get(member)
                if before is None or before[0] != epoch:
                    self._event(member, "epoch", epoch, row)
                self.member_epoch[member] = (epoch, row["member_state"])
        elif kind == self.TARGET_MEMBER:
            self._target_member(member, None if tomb else row)
        elif kind == self.TARGET_METADATA and not tomb:
            self._run(row)
        else:
            self._other(kind, row)
        self._check(now)

    def _target_member(self, member: str, row: Row | None) -> None:
        """A member's target (``row``) or its tombstone (None)."""
        if row is None:
            self.target.pop(member, None)
        else:
            self.target[member] = _flatten(row["partitions"])

    def _other(self, kind: str, row: Row) -> None:
        """A record of a type the replay of this group type does not otherwise read."""

    def _run_extra(self) -> Row:
        """Run columns only some group types fill."""
        return {"standby_tasks": None, "standby_tasks_moved": None}

    def _subscribed(self) -> list[str]:
        """The topics the group consumes (group_summary's ``subscribed_topics``)."""
        return sorted({t for ts in self.members.values() for t in ts})

    def _run(self, row: Row) -> None:
        epoch = row["epoch"]
        finished = row["assignment_timestamp"] or row["timestamp"]
        owners = _owner_sets(self.target)
        self.out.runs.append({
            **self.base, "partition": row["partition"], "offset": row["offset"],
            "epoch": epoch, "timestamp": finished, "record_timestamp": row["timestamp"],
            "since_previous_ms": None if self.previous_run_ms is None
            else finished - self.previous_run_ms,
            "epoch_bump_ms": self.bumped_at.get(epoch, self.bump_ms),
            "members": len(self.target), "partitions": len(owners),
            "partitions_moved": 0 if self.previous_owner is None
            else moved_owners(self.previous_owner, owners),
            **self._run_extra()})
        self.previous_owner = owners
        self.previous_run_ms = finished
        self.target_epoch = epoch
        for assigned in [e for e in self.bumped_at if e <= epoch]:
            del self.bumped_at[assigned]
        if self.open is not None and self.open.epoch <= epoch and self.open.target_ms is None:
            self.open.target_ms = finished

    def finish(self) -> None:
        self._close("incomplete", None)
        self.out.state.append({**self.base, "state": "dead" if self.deleted else
                               ("empty" if not self.members else "live"),
                               "state_timestamp": self.last_ms, "epoch": self.epoch,
                               "members": len(self.members),
                               "subscribed_topics": self._subscribed(),
                               "protocol_type": self.GROUP_TYPE})


class _ShareReplay(_ConsumerReplay):
    """A KIP-932 share group: members take their target at once (always Stable), a partition
    may be assigned to several members, and the group has no committed offsets."""

    GROUP_TYPE: ClassVar[str] = SHARE
    METADATA: ClassVar[str] = "ShareGroupMetadata"
    MEMBER_METADATA: ClassVar[str] = "ShareGroupMemberMetadata"
    CURRENT_ASSIGNMENT: ClassVar[str] = "ShareGroupCurrentMemberAssignment"
    TARGET_MEMBER: ClassVar[str] = "ShareGroupTargetAssignmentMember"
    TARGET_METADATA: ClassVar[str] = "ShareGroupTargetAssignmentMetadata"


class _StreamsReplay(_ConsumerReplay):
    """A KIP-1071 streams group: members are assigned tasks (subtopology id, partition) in
    roles; the active tasks play the partitions' part (one owner each), standby tasks are
    counted on their own. Members are Stable at state 1. What the group consumes is its
    topology's (source and repartition source topics), not its members' subscriptions."""

    GROUP_TYPE: ClassVar[str] = STREAMS
    STABLE_STATE: ClassVar[int] = STREAMS_STABLE
    METADATA: ClassVar[str] = "StreamsGroupMetadata"
    MEMBER_METADATA: ClassVar[str] = "StreamsGroupMemberMetadata"
    CURRENT_ASSIGNMENT: ClassVar[str] = "StreamsGroupCurrentMemberAssignment"
    TARGET_MEMBER: ClassVar[str] = "StreamsGroupTargetAssignmentMember"
    TARGET_METADATA: ClassVar[str] = "StreamsGroupTargetAssignmentMetadata"
    TOPOLOGY: ClassVar[str] = "StreamsGroupTopology"

    def __init__(self, store: str, group_id: str, out: GroupTables) -> None:
        super().__init__(store, group_id, out)
        self.standby: dict[str, list[TopicPartition]] = {}
        self.previous_standby: Owners | None = None
        self.topics: list[str] = []

    def _target_member(self, member: str, row: Row | None) -> None:
        if row is None:
            self.target.pop(member, None)
            self.standby.pop(member, None)
        else:
            self.target[member] = _flatten_tasks(row["active_tasks"])
            self.standby[member] = _flatten_tasks(row["standby_tasks"])

    def _other(self, kind: str, row: Row) -> None:
        if kind == self.TOPOLOGY:
            self.topics = [] if row["tombstone"] else list(row["subscribed_topics"] or ())

    def _run_extra(self) -> Row:
        owners = _owner_sets(self.standby)
        before, self.previous_standby = self.previous_standby, owners
        return {"standby_tasks": len(owners),
                "standby_tasks_moved": 0 if before is None else moved_owners(before, owners)}

    def _subscribed(self) -> list[str]:
        return sorted(self.topics)


class _ClassicReplay:
    def __init__(self, store: str, group_id: str, out: GroupTables) -> None:
        self.base = {"store": store, "group_id": group_id, "group_type": CLASSIC}
        self.out = out
        self.members: dict[str, int] = {}  # member -> generation it was last seen in
        self.previous_owner: Owner | None = None
        self.previous_run_ms: int | None = None
        self.last: Row | None = None
        self.deleted = False

    def apply(self, row: Row) -> None:
        now = row["timestamp"]
        if row["tombstone"]:
            for member in self.members:
                self._event(member, "left", None, row)
            self.members.clear()
            self.previous_owner = None
            self.deleted = True
            self.last = row
            return
        self.deleted = False
        self.last = row
        generation = row["epoch"]
        members = row["classic_members"] or []
        present = {m["member_id"] for m in members}
        for member in [m for m in self.members if m not in present]:
            self._event(member, "left", None, row)
            del self.members[member]
        plan: dict[str, list[tuple[str, int]]] = {}
        for m in members:
            member_id = m["member_id"]
            if member_id not in self.members:
                self._event(member_id, "joined", None, row)
            if self.members.get(member_id) != generation:
                self._event(member_id, "epoch", generation, row)
            self.members[member_id] = generation
            decoded = decode_assignment(m["assignment"]) or []
            plan[member_id] = [(t, p) for t, parts in decoded for p in parts]
        owners = _owners(plan)
        self.out.runs.append({
            **self.base, "partition": row["partition"], "offset": row["offset"],
            "epoch": generation, "timestamp": now, "record_timestamp": now,
            "since_previous_ms": None if self.previous_run_ms is None
            else now - self.previous_run_ms,
            "epoch_bump_ms": None, "members": len(members), "partitions": len(owners),
            "partitions_moved": 0 if self.previous_owner is None
            else moved(self.previous_owner, owners)})
        self.out.rebalances.append({
            **self.base, "epoch": generation, "started_ms": None, "target_ms": now,
            "completed_ms": now if members else None, "duration_ms": None,
            "members": len(members), "status": "completed" if members else "empty"})
        self.previous_owner = owners
        self.previous_run_ms = now

    def _event(self, member: str, event: str, epoch: int | None, row: Row) -> None:
        self.out.timeline.append({**self.base, "member_id": member, "event": event,
                                  "epoch": epoch, "timestamp": row["timestamp"],
                                  "offset": row["offset"]})

    def finish(self) -> None:
        row = self.last
        if row is None:
            return
        members = [] if self.deleted else (row["classic_members"] or [])
        topics: set[str] = set()
        if row["protocol_type"] == "consumer":
            for m in members:
                topics |= set(decode_subscription(m["subscription"]) or ())
        self.out.state.append({
            **self.base,
            "state": "dead" if self.deleted else ("live" if members else "empty"),
            "state_timestamp": row["timestamp"] if self.deleted
            else (row["assignment_timestamp"] if row["assignment_timestamp"] is not None
                  and row["assignment_timestamp"] >= 0 else row["timestamp"]),
            "epoch": row["epoch"], "members": len(members), "subscribed_topics": sorted(topics),
            "protocol_type": row["protocol_type"]})


def replay_group(store: str, group_id: str, rows: Iterable[Row]) -> GroupTables:
    """The rows of every group table for one group; ``rows`` in log order."""
    out = GroupTables()
    consumer: _ConsumerReplay | None = None
    share: _ShareReplay | None = None
    streams: _StreamsReplay | None = None
    classic: _ClassicReplay | None = None
    for row in rows:
        kind = row["type"]
        if kind == "GroupMetadata":
            if classic is None:
                classic = _ClassicReplay(store, group_id, out)
            classic.apply(row)
        elif kind.startswith("ConsumerGroup"):
            if consumer is None:
                consumer = _ConsumerReplay(store, group_id, out)
            consumer.apply(row)
        elif kind.startswith("ShareGroup"):
            if share is None:
                share = _ShareReplay(store, group_id, out)
            share.apply(row)
        elif kind.startswith("StreamsGroup"):
            if streams is None:
                streams = _StreamsReplay(store, group_id, out)
            streams.apply(row)
    for replay in (consumer, share, streams, classic):
        if replay is not None:
            replay.finish()
    return out
