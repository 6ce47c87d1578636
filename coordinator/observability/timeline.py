"""The rebalance timeline: every group event the coordinator saw, per group, with timestamps.

Two sources, kept in one order per group:

* **records**: every group record a coordinator partition applies (written by an event, or
  replayed when the partition loads) is kept as the runtime hands it over, the tuple
  ``(timestamp, offset, key, value)``, in a bounded ring per group. Appending that tuple is all
  the write path pays: nothing is formatted until someone reads.
* **annotations**: what the records cannot say, noted by the handlers as they decide (the
  ``note_*`` hooks, no-ops until a store is attached): the assignor that computed a target,
  how long it ran and whether it ran offloaded; why a member was removed (it left, its session
  expired, it did not revoke within its rebalance timeout, ...); a heartbeat fenced for a stale
  member epoch; a classic group's rebalance starting.

Events are derived when read, by the deriver the wiring gives the store
(``coordinator.groups.timeline_records.start``, which knows the group records; this package
imports nothing else of the coordinator). ``python -m coordinator log timeline`` derives the
same way over a store offline, so the two agree on every event the records say. Each ring keeps
its deriver between reads: a read applies only the entries appended since the last one and
drops the events of the entries the ring let go, so polling ``GET /timeline`` costs what
changed, not the whole ring. When entries went by unread (more were appended than the ring
holds), the deriver starts again from the ring's base.

A ring keeps at most ``timeline.max.events.per.group`` entries; the oldest record that falls
out is folded into the ring's *base*, the latest record per key, as compaction would keep it
(one dict store): the derivation starts from the base silently, so the events it gives stay
right about what each member holds, whatever was dropped.

Threads: records are fed on the event loop and, while a partition loads, on the loading thread;
readers copy a ring with single C-level operations (``list(deque)``, ``dict.copy``), atomic under
the GIL, and derive from the copy.
"""

from __future__ import annotations

import threading
import time
from collections import deque
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Protocol

Entry = tuple[int, int, Any, Any]
"""``(timestamp ms, offset, key, value)`` for a record (``value`` None for a tombstone), or
``(timestamp ms, -1, annotation name, fields)`` for an annotation."""

class Deriver(Protocol):
    """A group's events so far (``events``), extended by each entry ``apply`` is given."""

    events: list[dict[str, Any]]

    def apply(self, entry: Entry) -> None: ...


Starter = Callable[..., Deriver]
"""``start(base, group=..., topic_name=...) -> deriver``: a deriver in the state one group's
``base`` records (applied silently) describe."""

TopicName = Callable[[Any], "str | None"]
"""A topic's name by id, or None when unknown."""

DEFAULT_MAX_ENTRIES = 10000

# annotation names (the second member of an annotation entry)
TARGET = "target"
"""A target assignment was computed: ``assignor``, ``duration_ms``, ``offloaded`` (and the
``epoch`` when known)."""
REMOVED = "removed"
"""A member is being removed: ``member``, ``reason``."""
FENCED = "fenced"
"""A heartbeat was answered FENCED_MEMBER_EPOCH: ``member``, ``received_epoch``,
``known_epoch``."""
REBALANCE = "rebalance"
"""A classic group's rebalance started: ``generation``, ``reason``."""
ROUND = "round"
"""A target under incremental resolution (seed 004, Design III): ``epoch``, ``moved``,
``deferred`` (moves left for later rounds)."""
PARTITION_LEADER_MOVED = "partition-leader-moved"
"""A partition the group has committed offsets of got a new leader: ``topic``, ``partition``,
``from``, ``to``, ``leader_epoch``, ``reason``."""
COORDINATOR_MOVED = "coordinator-moved"
"""The group's coordinator partition got a new leader (``cluster.brokers`` > 1): ``from``,
``to`` (node ids), ``leader_epoch``, ``reason``."""

# why a member was removed (the ``reason`` of REMOVED)
LEFT = "left"
SESSION_EXPIRED = "session-expired"
REBALANCE_TIMEOUT = "rebalance-timeout"
REPLACED = "replaced"
"""A static member's instance was replaced by a new one with the same instance id."""
DID_NOT_REJOIN = "did-not-rejoin"
"""A classic member did not rejoin before the join phase ended."""
DID_NOT_SYNC = "did-not-sync"
"""A classic member had not sent SyncGroup when the leader's assignment never came."""


def _now_ms() -> int:
    return time.time_ns() // 1_000_000


class _Derived:
    """A ring's deriver between reads: the entries it applied that the ring still held at the
    last read, with how many events each gave (so the events of entries the ring lets go can be
    dropped from the front)."""

    __slots__ = ("applied", "deriver", "given")

    def __init__(self, deriver: Deriver) -> None:
        self.deriver = deriver
        self.applied: deque[Entry] = deque()
        self.given: deque[int] = deque()

    def apply(self, entry: Entry) -> None:
        events = self.deriver.events
        before = len(events)
        self.deriver.apply(entry)
        self.applied.append(entry)
        self.given.append(len(events) - before)

    def drop_before(self, first: Entry) -> bool:
        """Forget the entries applied before ``first`` (the ring's oldest) and their events;
        False if ``first`` was never applied (entries went by unread)."""
        applied, given = self.applied, self.given
        gone = 0
        while applied and applied[0] is not first:
            applied.popleft()
            gone += given.popleft()
        if gone:
            del self.deriver.events[:gone]
        return bool(applied)


class _Ring:
    __slots__ = ("base", "derived", "entries", "last", "partition")

    def __init__(self, partition: int) -> None:
        self.entries: deque[Entry] = deque()
        self.base: dict[Any, Entry] = {}
        self.partition = partition
        self.last = -1
        """The offset of the last record appended."""
        self.derived: _Derived | None = None


class TimelineStore:
    """The rings of every group, fed by the runtime (``on_record``) and the ``note_*`` hooks."""

    def __init__(self, start: Starter, group_of: Mapping[type, Callable[[Any], str]], *,
                 max_entries: int = DEFAULT_MAX_ENTRIES,
                 topic_name: TopicName | None = None) -> None:
        """``group_of``: for each group record key type, the key's group id (other records
        are not kept); ``topic_name``: names topics the group records only know by id."""
        self.start = start
        self._reading = threading.Lock()
        self.group_of = group_of
        self.max_entries = max_entries
        self.topic_name = topic_name
        self._rings: dict[str, _Ring] = {}
        self._by_partition: dict[int, set[str]] = {}

    # --- feeding ------------------------------------------------------------------------------
    def on_record(self, partition: int, offset: int, timestamp: int, key: Any,
                  value: Any) -> None:
        """The runtime applied a record (``CoordinatorRuntime.record_listener``): a group
        record goes to its group's ring. Called for every record written, so the common case
        is a handful of lookups and an append."""
        get = self.group_of.get(type(key))
        if get is None:
            return
        ring = self._rings.get(get(key))
        if ring is None or ring.partition != partition or offset <= ring.last:
            ring = self._slow_ring(get(key), partition, offset)
            if ring is None:
                return
        ring.last = offset
        entries = ring.entries
        entries.append((timestamp, offset, key, value))
        if len(entries) > self.max_entries:
            self._evict(ring)

    def _slow_ring(self, group_id: str, partition: int, offset: int) -> _Ring | None:
        """The ring of a group first seen, or seen through annotations only so far, or of a
        partition that loads again from its log (its records come again from the start)."""
        if self.max_entries <= 0:
            return None
        ring = self._rings.get(group_id)
        if ring is not None and ring.partition == partition and offset <= ring.last:
            self._forget_partition(partition)
            ring = None
        if ring is None:
            return self._ring(group_id, partition)
        ring.partition = partition
        self._by_partition.setdefault(partition, set()).add(group_id)
        return ring

    def annotate(self, group_id: str, name: str, fields: dict[str, Any],
                 timestamp: int | None = None) -> None:
        if self.max_entries <= 0:
            return
        ring = self._rings.get(group_id) or self._ring(group_id, -1)
        ring.entries.append((_now_ms() if timestamp is None else timestamp, -1, name, fields))
        if len(ring.entries) > self.max_entries:
            self._evict(ring)

    def groups_on(self, partition: int) -> set[str]:
        """The groups of coordinator partition ``partition`` with a timeline."""
        return set(self._by_partition.get(partition, ()))

    def _ring(self, group_id: str, partition: int) -> _Ring:
        ring = self._rings[group_id] = _Ring(partition)
        if partition >= 0:
            self._by_partition.setdefault(partition, set()).add(group_id)
        return ring

    @staticmethod
    def _evict(ring: _Ring) -> None:
        """The oldest entry goes; a record is kept in the base as the latest of its key."""
        entry = ring.entries.popleft()
        if entry[1] < 0:
            return  # an annotation: said what it had to about entries gone too
        if entry[3] is None:
            ring.base.pop(entry[2], None)  # the key is gone, as compaction would forget it
        else:
            ring.base[entry[2]] = entry

    def _forget_partition(self, partition: int) -> None:
        for group_id in self._by_partition.pop(partition, ()):
            self._rings.pop(group_id, None)

    # --- reading ------------------------------------------------------------------------------
    def groups(self) -> list[str]:
        return sorted(list(self._rings))

    def entries(self, group_id: str) -> tuple[list[Entry], list[Entry]] | None:
        """(base records in offset order, entries) of the group, or None if it has none."""
        ring = self._rings.get(group_id)
        if ring is None:
            return None
        entries = list(ring.entries)
        base = sorted(ring.base.copy().values(), key=lambda entry: entry[1])
        return base, entries

    def events(self, group_id: str, since: int | None = None) -> list[dict[str, Any]] | None:
        """The group's events (those at or after ``since``, in ms, if given), or None when the
        coordinator saw nothing of the group."""
        ring = self._rings.get(group_id)
        if ring is None:
            return None
        with self._reading:
            entries = list(ring.entries)
            derived = ring.derived
            fresh = entries
            if derived is not None and entries and derived.drop_before(entries[0]):
                last = derived.applied[-1]
                at = len(entries) - 1
                while at >= 0 and entries[at] is not last:
                    at -= 1
                fresh = entries[at + 1:]
            elif derived is None or entries:
                base = sorted(ring.base.copy().values(), key=lambda entry: entry[1])
                derived = ring.derived = _Derived(
                    self.start(base, group=group_id, topic_name=self.topic_name))
            for entry in fresh:
                derived.apply(entry)
            events = derived.deriver.events
            if since is not None:
                return [event for event in events if event["timestamp"] >= since]
            return list(events)


# --- the store the hooks feed --------------------------------------------------------------------
_attached: TimelineStore | None = None


def attach(store: TimelineStore) -> None:
    global _attached
    _attached = store


def detach(store: TimelineStore) -> None:
    global _attached
    if _attached is store:
        _attached = None


def install(runtime: Any, start: Starter, group_of: Mapping[type, Callable[[Any], str]], *,
            max_entries: int = DEFAULT_MAX_ENTRIES,
            topic_name: TopicName | None = None) -> TimelineStore:
    """A store fed by ``runtime`` (a ``CoordinatorRuntime``: its ``record_listener``) and by
    the hooks below."""
    store = TimelineStore(start, group_of, max_entries=max_entries, topic_name=topic_name)
    if max_entries > 0:
        runtime.record_listener = store.on_record
        # a partition that loads replays every group record to the store (the rest, offsets
        # above all, only as the latest record per key)
        runtime.record_listener_keys = frozenset(group_of)
    attach(store)
    return store


def note(group_id: str, name: str, timestamp: int | None = None, **fields: Any) -> None:
    """An annotation for ``group_id``'s timeline (no-op when no store is attached)."""
    store = _attached
    if store is not None:
        store.annotate(group_id, name, fields, timestamp)


def note_removed(group_id: str, member_id: str, reason: str,
                 timestamp: int | None = None) -> None:
    """``member_id`` is being removed from ``group_id`` because of ``reason`` (``LEFT``,
    ``SESSION_EXPIRED``, ...): said by the member's ``member-left`` event."""
    store = _attached
    if store is not None:
        store.annotate(group_id, REMOVED, {"member": member_id, "reason": reason}, timestamp)


def note_target(group_id: str, assignor: str, duration_ms: float, *, offloaded: bool,
                epoch: int | None = None) -> None:
    """A server-side assignor computed ``group_id``'s next target (said by its
    ``target-computed`` event)."""
    store = _attached
    if store is not None:
        fields: dict[str, Any] = {"assignor": assignor, "duration_ms": round(duration_ms, 3),
                                  "offloaded": offloaded}
        if epoch is not None:
            fields["epoch"] = epoch
        store.annotate(group_id, TARGET, fields)


def note_round(group_id: str, epoch: int, moved: int, deferred: int,
               timestamp: int | None = None) -> None:
    """The target of ``epoch`` moved ``moved`` partitions and left ``deferred`` moves for
    later rounds (incremental resolution; said by a ``round`` event after its
    ``target-computed``)."""
    store = _attached
    if store is not None:
        store.annotate(group_id, ROUND, {"epoch": epoch, "moved": moved, "deferred": deferred},
                       timestamp)


def note_fenced(group_id: str, member_id: str, received_epoch: int, known_epoch: int,
                timestamp: int | None = None) -> None:
    """A heartbeat of ``member_id`` was answered FENCED_MEMBER_EPOCH."""
    store = _attached
    if store is not None:
        store.annotate(group_id, FENCED, {"member": member_id, "received_epoch": received_epoch,
                                          "known_epoch": known_epoch}, timestamp)


def note_rebalance(group_id: str, generation: int, reason: str,
                   timestamp: int | None = None) -> None:
    """A classic group's rebalance started (its join phase), from ``generation``."""
    store = _attached
    if store is not None:
        store.annotate(group_id, REBALANCE, {"generation": generation, "reason": reason},
                       timestamp)


def note_coordinator_moved(partition: int, from_node: int, to_node: int, leader_epoch: int,
                           reason: str) -> int:
    """Coordinator partition ``partition`` moved from broker ``from_node`` to ``to_node``: a
    ``coordinator-moved`` event in the timeline of each of its groups; how many."""
    store = _attached
    if store is None:
        return 0
    groups = sorted(store.groups_on(partition))
    fields = {"from": from_node, "to": to_node, "leader_epoch": leader_epoch, "reason": reason}
    for group_id in groups:
        store.annotate(group_id, COORDINATOR_MOVED, dict(fields))
    return len(groups)


def note_partition_leader_moved(groups: Iterable[str], topic: str, partition: int,
                                from_node: int, to_node: int, leader_epoch: int,
                                reason: str) -> None:
    """A data partition's leader moved: a ``partition-leader-moved`` event in the timeline of
    each of ``groups`` (those it touches)."""
    store = _attached
    if store is None:
        return
    fields = {"topic": topic, "partition": partition, "from": from_node, "to": to_node,
              "leader_epoch": leader_epoch, "reason": reason}
    for group_id in groups:
        store.annotate(group_id, PARTITION_LEADER_MOVED, dict(fields))


# --- the control endpoint ----------------------------------------------------------------------
def http_timeline(app: Any, query: Mapping[str, Sequence[str]]) -> tuple[int, Any]:
    """``GET /timeline?group=G[&since=ms]`` of the control endpoint: (200, {"group", "events"})
    or (404 | 400, {"error", ...}). ``app`` is the ``coordinator.app.App`` (its ``timeline``
    store)."""
    store: TimelineStore | None = getattr(app, "timeline", None)
    if store is None or store.max_entries <= 0:
        return 404, {"error": "the timeline is disabled (timeline.max.events.per.group=0)"}
    group = _one(query, "group")
    if not group:
        return 400, {"error": "the group parameter is required: /timeline?group=G",
                     "groups": store.groups()}
    since_text = _one(query, "since")
    since: int | None = None
    if since_text:
        try:
            since = int(since_text)
        except ValueError:
            return 400, {"error": f"since must be a timestamp in ms, not {since_text!r}"}
    events = store.events(group, since)
    if events is None:
        return 404, {"error": f"the coordinator has seen nothing of group {group}",
                     "group": group}
    # what the group's clients reported (``client_events``: the wiring's, KIP-714 telemetry)
    client_events = getattr(app, "client_events", None)
    if client_events is not None:
        events = sorted([*events, *client_events(group, since)],
                        key=lambda event: event["timestamp"])
    return 200, {"group": group, "events": events}


def _one(query: Mapping[str, Sequence[str]], name: str) -> str | None:
    values = query.get(name) or ()
    return values[0] if values else None


def record_view(events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The events as the records alone say them: no annotation-only event (those have no
    ``offset``), no annotation field. What a store read offline gives."""
    return [{k: v for k, v in event.items() if k not in ANNOTATION_FIELDS}
            for event in events if "offset" in event]


ANNOTATION_FIELDS = frozenset({"assignor", "duration_ms", "offloaded", "reason", "fenced"})
"""Event fields that come from annotations (absent from a timeline read from a store)."""
