"""The rebalance timeline from the records: group records (and the annotations beside them) in,
timeline events out, for classic, consumer (mixed too), share and streams groups.

``derive(base, entries)`` is a pure function of one group's records in log order: the runtime's
rings (``coordinator.observability.timeline``) call it when someone reads, and
``python -m coordinator log timeline`` calls it over a store (``store_timeline``), so a running
server and its store agree on every event the records say. Each event is a dict::

    {"timestamp": ms, "kind": ..., "group": ..., "group_type": ..., <fields>, "offset": n}

``timestamp`` is the record's (the batch's wall-clock ms); ``offset`` the record's offset in
its coordinator partition, absent from the few events only annotations give. Kinds:

* ``member-joined`` (``member``, ``instance_id``, ``client_id``, ``client_host``, and the
  subscription: ``subscribed_topics`` / ``subscribed_regex``; ``classic`` for a classic
  member of a consumer group; ``process_id`` for streams), ``subscription-changed``;
* ``member-left`` (``member``; with annotations ``reason``: left, session-expired,
  rebalance-timeout, replaced, did-not-rejoin, did-not-sync, and ``fenced``: whether the
  coordinator removed it);
* ``member-fenced`` (annotation only: a heartbeat answered FENCED_MEMBER_EPOCH:
  ``received_epoch``, ``known_epoch``); ``rebalance-started`` (annotation only: a classic
  join phase: ``generation``, ``reason``);
* ``epoch-bumped`` (``epoch``: the group epoch, a classic group's generation);
* ``target-computed`` (``epoch``, ``members``, ``moved``: partitions (tasks) in a member's
  target that its previous target did not have; annotations ``assignor``, ``duration_ms``,
  ``offloaded``; a classic generation's: ``protocol``, ``leader``);
* ``revocation-requested`` (KIP-848 and streams: the coordinator asked ``member`` to revoke
  ``partitions`` / ``tasks``), ``revoked`` and ``assigned`` (``member``, ``epoch``,
  ``partitions`` as ``{topic: [p, ...]}``, or ``tasks`` as ``{"active" | "standby" |
  "warmup": {subtopology: [p, ...]}}``; ``removed``: true when the member's partitions went
  with it): as acknowledged. A KIP-848 or streams member revokes when its heartbeat reports
  owned partitions without them (the current assignment record that leaves
  ``PartitionsPendingRevocation``) and is assigned by the record that gives it partitions; a
  classic member is assigned when SyncGroup is answered (its generation's GroupMetadata record)
  and, with a cooperative protocol, revokes through its next JoinGroup (the owned partitions
  of the next generation's subscription); an eager member revokes everything when it rejoins;
* ``member-epoch`` (``member``, ``epoch``, ``state``: stable, unrevoked, unreleased, ...);
* ``held`` (``member``: whose partitions, ``partitions``, ``deadline_ms``, ``reason``: why it
  went) and ``released`` (``member``, ``partitions``, ``reason``: ``taken`` by a member that
  joined, or ``expired``): deferred resolution's held partitions (seed 004, Design II);
  ``round`` (annotation only, after its ``target-computed``: ``epoch``, ``moved``,
  ``deferred``): a target under incremental resolution (Design III);
* ``group-stable`` (``epoch``, ``members``: every member at the group's epoch, holding its
  target; a classic group: a generation synced); ``group-deleted``.
"""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from operator import attrgetter
from typing import Any

from coordinator.metadata.log import METADATA_TOPIC
from coordinator.observability import timeline
from coordinator.observability.timeline import Entry, TopicName
from storage.dump import partitions_in, read_partition
from storage.errors import RecordDecodeError
from storage.records import (
    RECORD_TYPES,
    ConsumerGroupCurrentMemberAssignmentKey,
    ConsumerGroupHeldPartitionsKey,
    ConsumerGroupMemberMetadataKey,
    ConsumerGroupMetadataKey,
    ConsumerGroupPartitionMetadataKey,
    ConsumerGroupTargetAssignmentMemberKey,
    ConsumerGroupTargetAssignmentMetadataKey,
    GroupMetadataKey,
    ShareGroupCurrentMemberAssignmentKey,
    ShareGroupMemberMetadataKey,
    ShareGroupMetadataKey,
    ShareGroupPartitionMetadataKey,
    ShareGroupTargetAssignmentMemberKey,
    ShareGroupTargetAssignmentMetadataKey,
    StreamsGroupCurrentMemberAssignmentKey,
    StreamsGroupHeldTasksKey,
    StreamsGroupMemberMetadataKey,
    StreamsGroupMetadataKey,
    StreamsGroupTargetAssignmentMemberKey,
    StreamsGroupTargetAssignmentMetadataKey,
    TopicMetadataKey,
    TopicMetadataValue,
    decode_key,
    decode_record,
    decode_value,
    key_type_id,
)

from .classic.consumer_protocol import decode_assignment, decode_subscription

CLASSIC, CONSUMER, SHARE, STREAMS = "classic", "consumer", "share", "streams"

# What each group record key is: (group type, role).
_METADATA, _PARTITIONS, _MEMBER, _TARGET_META, _TARGET, _CURRENT, _HELD = range(7)
_ROLES: dict[type, tuple[str, int]] = {
    ConsumerGroupMetadataKey: (CONSUMER, _METADATA),
    ConsumerGroupPartitionMetadataKey: (CONSUMER, _PARTITIONS),
    ConsumerGroupMemberMetadataKey: (CONSUMER, _MEMBER),
    ConsumerGroupTargetAssignmentMetadataKey: (CONSUMER, _TARGET_META),
    ConsumerGroupTargetAssignmentMemberKey: (CONSUMER, _TARGET),
    ConsumerGroupCurrentMemberAssignmentKey: (CONSUMER, _CURRENT),
    ConsumerGroupHeldPartitionsKey: (CONSUMER, _HELD),
    ShareGroupMetadataKey: (SHARE, _METADATA),
    ShareGroupPartitionMetadataKey: (SHARE, _PARTITIONS),
    ShareGroupMemberMetadataKey: (SHARE, _MEMBER),
    ShareGroupTargetAssignmentMetadataKey: (SHARE, _TARGET_META),
    ShareGroupTargetAssignmentMemberKey: (SHARE, _TARGET),
    ShareGroupCurrentMemberAssignmentKey: (SHARE, _CURRENT),
    StreamsGroupMetadataKey: (STREAMS, _METADATA),
    StreamsGroupMemberMetadataKey: (STREAMS, _MEMBER),
    StreamsGroupTargetAssignmentMetadataKey: (STREAMS, _TARGET_META),
    StreamsGroupTargetAssignmentMemberKey: (STREAMS, _TARGET),
    StreamsGroupCurrentMemberAssignmentKey: (STREAMS, _CURRENT),
    StreamsGroupHeldTasksKey: (STREAMS, _HELD),
}

GROUP_OF: dict[type, Callable[[Any], str]] = {
    GroupMetadataKey: attrgetter("group"),
    **{key_type: attrgetter("group_id") for key_type in _ROLES},
}
"""The group records the timeline keeps, with the way to their group id."""

_STABLE = {CONSUMER: 0, SHARE: 0, STREAMS: 1}
_STATES = {
    CONSUMER: {0: "stable", 1: "unrevoked-partitions", 2: "unreleased-partitions"},
    SHARE: {0: "stable"},
    STREAMS: {1: "stable", 2: "unrevoked-tasks", 3: "unreleased-tasks"},
}
_TASK_KINDS = ("active", "standby", "warmup")

Held = frozenset[tuple[Any, ...]]
"""What a member holds: (topic id, partition) for consumer and share members, (topic name,
partition) for classic members, (task kind, subtopology, partition) for streams members."""
_NOTHING: Held = frozenset()


@dataclass(slots=True)
class _Member:
    epoch: int = 0
    state: int | None = None
    held: Held = _NOTHING
    pending: Held = _NOTHING
    subscription: tuple[Any, ...] = ()
    assignment: Held = _NOTHING
    """Classic: the assignment of the member's last generation."""


@dataclass(slots=True)
class _Group:
    group_type: str
    epoch: int | None = None
    target_epoch: int = 0
    members: dict[str, _Member] = field(default_factory=dict)
    targets: dict[str, Held] = field(default_factory=dict)
    moved: int = 0
    stable: tuple[int, frozenset[str]] | None = None
    held: dict[str, tuple[Held, int]] = field(default_factory=dict)
    """Deferred resolution: member id -> (its held partitions, their deadline)."""


class _Deriver:
    def __init__(self, topic_name: TopicName | None) -> None:
        self.topic_name = topic_name
        self.names: dict[uuid.UUID, str] = {}
        self.group: _Group | None = None
        self.group_id = ""
        self.events: list[dict[str, Any]] = []
        self.emitting = False
        self.pending_target: dict[str, Any] | None = None
        self.pending_round: dict[str, Any] | None = None
        self.pending_removed: dict[str, str] = {}

    # --- output -------------------------------------------------------------------------------
    def emit(self, ts: int, offset: int | None, kind: str, **fields: Any) -> None:
        if not self.emitting:
            return
        group = self.group
        event: dict[str, Any] = {"timestamp": ts, "kind": kind, "group": self.group_id,
                                 "group_type": group.group_type if group else None}
        event.update(fields)
        if offset is not None:
            event["offset"] = offset
        self.events.append(event)

    def render(self, group_type: str, held: Iterable[tuple[Any, ...]]) -> dict[str, Any]:
        if group_type == STREAMS:
            tasks: dict[str, dict[str, list[int]]] = {}
            for kind, subtopology, partition in held:
                tasks.setdefault(kind, {}).setdefault(subtopology, []).append(partition)
            return {kind: {s: sorted(ps) for s, ps in sorted(tasks[kind].items())}
                    for kind in _TASK_KINDS if kind in tasks}
        by_topic: dict[str, list[int]] = {}
        for topic, partition in held:
            name = topic if group_type == CLASSIC else self._name(topic)
            by_topic.setdefault(name, []).append(partition)
        return {topic: sorted(ps) for topic, ps in sorted(by_topic.items())}

    def _name(self, topic_id: uuid.UUID) -> str:
        name = self.names.get(topic_id)
        if name is None and self.topic_name is not None:
            name = self.topic_name(topic_id)
        return name if name is not None else str(topic_id)

    def _parts(self, group_type: str, held: Iterable[tuple[Any, ...]]) -> dict[str, Any]:
        return {"tasks" if group_type == STREAMS else "partitions": self.render(group_type, held)}

    # --- input --------------------------------------------------------------------------------
    def apply(self, entry: Entry) -> None:
        ts, offset, key, value = entry
        if offset < 0:
            self._annotation(ts, key, value)
            return
        if isinstance(key, GroupMetadataKey):
            self.group_id = key.group
            self._classic(ts, offset, value)
            return
        role = _ROLES.get(type(key))
        if role is None:
            return
        group_type, what = role
        self.group_id = key.group_id
        group = self.group
        if group is None or group.group_type != group_type:
            if value is None:
                return  # a tombstone of a group type the group does not have (any more)
            group = self.group = _Group(group_type)
        if what == _METADATA:
            self._metadata(group, ts, offset, value)
        elif what == _PARTITIONS:
            for topic in getattr(value, "topics", ()):
                self.names[topic.topic_id] = topic.topic_name
        elif what == _MEMBER:
            self._member(group, ts, offset, key.member_id, value)
        elif what == _TARGET:
            self._target(group, key.member_id, value)
        elif what == _TARGET_META:
            self._target_metadata(group, ts, offset, value)
        elif what == _HELD:
            self._held(group, ts, offset, key.member_id, value)
        else:
            self._current(group, ts, offset, key.member_id, value)

    def _annotation(self, ts: int, name: str, fields: Mapping[str, Any]) -> None:
        if name == timeline.TARGET:
            self.pending_target = dict(fields)
        elif name == timeline.ROUND:
            self.pending_round = dict(fields)
        elif name == timeline.REMOVED:
            self.pending_removed[fields["member"]] = fields["reason"]
        elif name == timeline.FENCED:
            self.emit(ts, None, "member-fenced", member=fields["member"], reason="epoch",
                      received_epoch=fields["received_epoch"], known_epoch=fields["known_epoch"])
        elif name == timeline.COORDINATOR_MOVED:
            self.emit(ts, None, "coordinator-moved", **{"from": fields["from"], "to": fields["to"],
                      "leader_epoch": fields["leader_epoch"], "reason": fields["reason"]})
        elif name == timeline.PARTITION_LEADER_MOVED:
            self.emit(ts, None, "partition-leader-moved", topic=fields["topic"],
                      partition=fields["partition"], **{"from": fields["from"],
                      "to": fields["to"], "leader_epoch": fields["leader_epoch"],
                      "reason": fields["reason"]})
        elif name == timeline.REBALANCE:
            if self.group is None:
                self.group = _Group(CLASSIC)
            self.emit(ts, None, "rebalance-started", generation=fields["generation"],
                      reason=fields["reason"])

    # --- KIP-848-style groups (consumer, share, streams) --------------------------------------
    def _metadata(self, group: _Group, ts: int, offset: int, value: Any) -> None:
        if value is None:
            self.emit(ts, offset, "group-deleted")
            self.group = None
            return
        if value.epoch != group.epoch:
            group.epoch = value.epoch
            self.emit(ts, offset, "epoch-bumped", epoch=value.epoch)

    def _member(self, group: _Group, ts: int, offset: int, member_id: str, value: Any) -> None:
        member = group.members.get(member_id)
        if value is None:
            if member is not None:
                self._remove(group, ts, offset, member_id, member)
            return
        subscription, fields = _member_fields(group.group_type, value)
        if member is None:
            group.members[member_id] = _Member(subscription=subscription)
            self.emit(ts, offset, "member-joined", member=member_id, **fields)
        elif subscription != member.subscription:
            member.subscription = subscription
            if group.group_type != STREAMS:
                self.emit(ts, offset, "subscription-changed", member=member_id,
                          subscribed_topics=fields["subscribed_topics"],
                          **({"subscribed_regex": fields["subscribed_regex"]}
                             if "subscribed_regex" in fields else {}))

    def _remove(self, group: _Group, ts: int, offset: int, member_id: str,
                member: _Member) -> None:
        if member.held:
            self.emit(ts, offset, "revoked", member=member_id, epoch=member.epoch,
                      **self._parts(group.group_type, member.held), removed=True)
        del group.members[member_id]
        reason = self.pending_removed.pop(member_id, None)
        extra = {} if reason is None else {"reason": reason, "fenced": reason != timeline.LEFT}
        self.emit(ts, offset, "member-left", member=member_id, **extra)

    def _target(self, group: _Group, member_id: str, value: Any) -> None:
        if value is None:
            group.targets.pop(member_id, None)
            return
        new = _target_held(group.group_type, value)
        group.moved += len(new - group.targets.get(member_id, _NOTHING))
        group.targets[member_id] = new

    def _target_metadata(self, group: _Group, ts: int, offset: int, value: Any) -> None:
        if value is None:
            group.target_epoch = 0
            return
        group.target_epoch = value.assignment_epoch
        extra: dict[str, Any] = {}
        note = self.pending_target
        if note is not None and note.get("epoch", value.assignment_epoch) == \
                value.assignment_epoch:
            extra = {k: note[k] for k in ("assignor", "duration_ms", "offloaded")}
            self.pending_target = None
        self.emit(ts, offset, "target-computed", epoch=value.assignment_epoch,
                  members=len(group.targets), moved=group.moved, **extra)
        group.moved = 0
        note = self.pending_round
        if note is not None and note["epoch"] == value.assignment_epoch:
            self.pending_round = None
            self.emit(ts, None, "round", epoch=note["epoch"], moved=note["moved"],
                      deferred=note["deferred"])

    def _held(self, group: _Group, ts: int, offset: int, member_id: str, value: Any) -> None:
        gtype = group.group_type
        before, deadline = group.held.get(member_id, (_NOTHING, 0))
        if value is None:
            group.held.pop(member_id, None)
            if before:
                self.emit(ts, offset, "released", member=member_id,
                          **self._parts(gtype, before),
                          reason="expired" if ts >= deadline else "taken")
            return
        now = (frozenset(_tasks("active", value.active_tasks)) if gtype == STREAMS
               else _target_held(gtype, value))
        group.held[member_id] = (now, value.deadline_ms)
        if now - before:
            self.emit(ts, offset, "held", member=member_id, **self._parts(gtype, now - before),
                      deadline_ms=value.deadline_ms, reason=value.reason)
        if before - now:
            self.emit(ts, offset, "released", member=member_id,
                      **self._parts(gtype, before - now), reason="taken")

    def _current(self, group: _Group, ts: int, offset: int, member_id: str, value: Any) -> None:
        gtype = group.group_type
        member = group.members.get(member_id)
        if value is None:
            if member is not None and member.held:
                self.emit(ts, offset, "revoked", member=member_id, epoch=member.epoch,
                          **self._parts(gtype, member.held), removed=True)
                member.held = member.pending = _NOTHING
            return
        if member is None:
            member = group.members[member_id] = _Member()  # its metadata was compacted away
        assigned, pending = _current_held(gtype, value)
        keep = assigned | pending
        revoked = member.held - keep
        added = assigned - member.held
        requested = pending - member.pending
        epoch = value.member_epoch
        if revoked:
            self.emit(ts, offset, "revoked", member=member_id, epoch=epoch,
                      **self._parts(gtype, revoked))
        if requested:
            self.emit(ts, offset, "revocation-requested", member=member_id, epoch=epoch,
                      **self._parts(gtype, requested))
        if added:
            self.emit(ts, offset, "assigned", member=member_id, epoch=epoch,
                      **self._parts(gtype, added))
        if epoch != member.epoch or value.state != member.state:
            self.emit(ts, offset, "member-epoch", member=member_id, epoch=epoch,
                      state=_STATES[gtype].get(value.state, "unknown"))
        member.epoch, member.state, member.held, member.pending = epoch, value.state, keep, \
            pending
        self._check_stable(group, ts, offset)

    def _check_stable(self, group: _Group, ts: int, offset: int) -> None:
        members = group.members
        if not members or group.epoch is None or group.target_epoch != group.epoch:
            return
        stable = _STABLE[group.group_type]
        if any(m.epoch != group.epoch or m.state != stable or m.pending
               for m in members.values()):
            return
        now = (group.epoch, frozenset(members))
        if now != group.stable:
            group.stable = now
            self.emit(ts, offset, "group-stable", epoch=group.epoch, members=len(members))

    # --- classic groups -----------------------------------------------------------------------
    def _classic(self, ts: int, offset: int, value: Any) -> None:
        group = self.group
        if value is None:
            if group is not None and group.group_type == CLASSIC:
                self.emit(ts, offset, "group-deleted")
                self.group = None
            return
        if group is None or group.group_type != CLASSIC:
            group = self.group = _Group(CLASSIC)
        consumer = value.protocol_type == "consumer"
        new_generation = value.generation != group.epoch
        current = {m.member_id: m for m in value.members}
        for member_id in [m for m in group.members if m not in current]:
            self._remove(group, ts, offset, member_id, group.members[member_id])
        decoded: dict[str, tuple[Held | None, Held]] = {}
        for member_id, record in current.items():
            subscription = decode_subscription(record.subscription) if consumer else None
            owned: Held | None = None
            if subscription is not None and subscription.version >= 1:
                owned = frozenset((t, p) for t, ps in subscription.owned for p in ps)
            given = decode_assignment(record.assignment) if consumer else None
            decoded[member_id] = (owned, frozenset((t, p) for t, ps in given or () for p in ps))
            if member_id not in group.members:
                group.members[member_id] = _Member(epoch=value.generation)
                topics = sorted(subscription.topics) if subscription is not None else None
                self.emit(ts, offset, "member-joined", member=member_id,
                          instance_id=record.group_instance_id, client_id=record.client_id,
                          client_host=record.client_host, subscribed_topics=topics)
        if new_generation:
            group.epoch = value.generation
            self.emit(ts, offset, "epoch-bumped", epoch=value.generation)
        # Revocations first (acknowledged by this generation's JoinGroup: what it no longer
        # owns), then the generation's target, then what SyncGroup gave and what it takes away
        # (a cooperative member gives that up after SyncGroup, and says so when it rejoins).
        for member_id, (owned, _) in decoded.items():
            member = group.members[member_id]
            if new_generation and member.held:
                revoked = member.held - (owned or _NOTHING)
                if revoked:
                    self.emit(ts, offset, "revoked", member=member_id, epoch=value.generation,
                              **self._parts(CLASSIC, revoked))
                    member.held -= revoked
        if new_generation and current:
            moved = sum(len(assignment - group.members[m].assignment)
                        for m, (_, assignment) in decoded.items())
            self.emit(ts, offset, "target-computed", epoch=value.generation,
                      members=len(current), moved=moved, protocol=value.protocol,
                      leader=value.leader)
        for member_id, (_, assignment) in decoded.items():
            member = group.members[member_id]
            added = assignment - member.held
            if added:
                self.emit(ts, offset, "assigned", member=member_id, epoch=value.generation,
                          **self._parts(CLASSIC, added))
            pending = member.held - assignment
            if pending - member.pending:
                self.emit(ts, offset, "revocation-requested", member=member_id,
                          epoch=value.generation, **self._parts(CLASSIC, pending - member.pending))
            member.held |= assignment
            member.pending = pending
            member.assignment = assignment
            member.epoch = value.generation
        if current and not any(group.members[m].pending for m in current):
            # stable, unless a cooperative member is yet to give partitions up
            now = (value.generation, frozenset(current))
            if now != group.stable:
                group.stable = now
                self.emit(ts, offset, "group-stable", epoch=value.generation,
                          members=len(current))


def _member_fields(group_type: str, value: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    """(what a change of counts as a subscription change, the member-joined fields)."""
    fields: dict[str, Any] = {"instance_id": getattr(value, "instance_id", None),
                              "client_id": value.client_id, "client_host": value.client_host}
    if group_type == STREAMS:
        fields["process_id"] = value.process_id
        return (value.topology_epoch,), fields
    topics = sorted(value.subscribed_topic_names)
    fields["subscribed_topics"] = topics
    subscription: tuple[Any, ...] = (tuple(topics),)
    if group_type == CONSUMER:
        fields["subscribed_regex"] = value.subscribed_topic_regex
        fields["classic"] = value.classic_member_metadata is not None
        subscription += (value.subscribed_topic_regex,)
    return subscription, fields


def _tasks(kind: str, tasks: Iterable[Any]) -> set[tuple[Any, ...]]:
    return {(kind, t.subtopology_id, p) for t in tasks for p in t.partitions}


def _target_held(group_type: str, value: Any) -> Held:
    if group_type == STREAMS:
        return frozenset(_tasks("active", value.active_tasks)
                         | _tasks("standby", value.standby_tasks)
                         | _tasks("warmup", value.warmup_tasks))
    return frozenset((tp.topic_id, p) for tp in value.topic_partitions for p in tp.partitions)


def _current_held(group_type: str, value: Any) -> tuple[Held, Held]:
    """(assigned, pending revocation) of a current member assignment record."""
    if group_type == STREAMS:
        assigned = (_tasks("active", value.active_tasks) | _tasks("standby", value.standby_tasks)
                    | _tasks("warmup", value.warmup_tasks))
        pending = (_tasks("active", value.active_tasks_pending_revocation)
                   | _tasks("standby", value.standby_tasks_pending_revocation)
                   | _tasks("warmup", value.warmup_tasks_pending_revocation))
        return frozenset(assigned), frozenset(pending)
    assigned_tp = frozenset((tp.topic_id, p) for tp in value.assigned_partitions
                            for p in tp.partitions)
    pending_tp = getattr(value, "partitions_pending_revocation", ())
    return assigned_tp, frozenset((tp.topic_id, p) for tp in pending_tp for p in tp.partitions)


# ------------------------------------------------------------------------------ the functions
def derive(base: Iterable[Entry], entries: Iterable[Entry], *, group: str = "",
           topic_name: TopicName | None = None) -> list[dict[str, Any]]:
    """The timeline events of one group: ``base`` records (the latest record of each key the
    group's ring let go, in offset order) set the state silently, then ``entries`` (records and
    annotations, in the order the coordinator saw them) give the events. ``group`` is the group's
    id (its records say it too); ``topic_name`` names the topics the group's records know only
    by id."""
    deriver = start(base, group=group, topic_name=topic_name)
    for entry in entries:
        deriver.apply(entry)
    return deriver.events


def start(base: Iterable[Entry], *, group: str = "",
          topic_name: TopicName | None = None) -> _Deriver:
    """A deriver in the state ``base`` sets (silently), to which entries are then applied one
    by one (``apply``), each appending its events to ``events``: what :func:`derive` does, kept
    alive so that a reader can go on from where it stopped."""
    deriver = _Deriver(topic_name)
    deriver.group_id = group
    for entry in base:
        deriver.apply(entry)
    deriver.emitting = True
    deriver.pending_target = None
    deriver.pending_removed.clear()
    return deriver


def topic_names(log_dir: str | os.PathLike[str]) -> dict[uuid.UUID, str]:
    """Topic ids to names, from a store's ``__cluster_metadata-0`` (what the running server's
    metadata image holds)."""
    names: dict[str, uuid.UUID] = {}
    for _, _, key_bytes, value_bytes in read_partition(log_dir, 0, METADATA_TOPIC):
        try:
            key, value = decode_record(key_bytes, value_bytes)
        except RecordDecodeError:
            continue
        if isinstance(key, TopicMetadataKey):
            if isinstance(value, TopicMetadataValue):
                names[key.name] = value.topic_id
            else:
                names.pop(key.name, None)
    return {topic_id: name for name, topic_id in names.items()}


_GROUP_TYPE_IDS = frozenset(rt.type_id for rt in RECORD_TYPES.values() if rt.key_cls in GROUP_OF)


def store_entries(log_dir: str | os.PathLike[str], group: str | None = None
                  ) -> dict[str, list[Entry]]:
    """Every group record of a store (read-only), by group id, in log order; only ``group``'s
    if given."""
    out: dict[str, list[Entry]] = {}
    for partition in partitions_in(log_dir):
        for offset, ts, key_bytes, value_bytes in read_partition(log_dir, partition):
            try:
                type_id = key_type_id(key_bytes)
                if type_id not in _GROUP_TYPE_IDS:
                    continue
                key = decode_key(key_bytes)
                group_id = GROUP_OF[type(key)](key)
                if group is not None and group_id != group:
                    continue
                value = decode_value(type_id, value_bytes)
            except RecordDecodeError:
                continue
            out.setdefault(group_id, []).append((ts, offset, key, value))
    return out


def store_timeline(log_dir: str | os.PathLike[str], group: str | None = None
                   ) -> Iterator[dict[str, Any]]:
    """The timeline events a store's records give (``python -m coordinator log timeline``),
    group by group in group id order; only ``group``'s if given."""
    names = topic_names(log_dir)
    for group_id, entries in sorted(store_entries(log_dir, group).items()):
        yield from derive((), entries, group=group_id, topic_name=names.get)

