"""The rebalance timeline of a group, and assertions over it.

The server keeps every group event it sees (members joining, leaving and fenced, epoch bumps,
targets computed, each member's revocations and assignments as acknowledged, the group
becoming stable) and serves them as JSON from its control endpoint, ``GET
/timeline?group=G[&since=ms]``; ``python -m coordinator log timeline <log dir>`` derives the
same events from a store. ``Timeline`` is one group's events, fetched or given::

    timeline = Timeline.fetch("http://127.0.0.1:8080", "orders")   # or a ControlClient
    timeline = timeline.wait_until_stable(members=3, timeout=30)
    assert timeline.rebalance_count() == 3
    timeline.assert_no_partition_owned_twice()
    for change in timeline.assignment_history(member_id):
        print(change.kind, sorted(change.partitions))

Each event is a dict with ``timestamp`` (wall-clock ms, the time of the record that says it),
``kind``, ``group``, ``group_type`` and the fields of its kind (README, "Rebalance timeline").
This module needs only the standard library.
"""

from __future__ import annotations

import json
import time
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import Any, NamedTuple

ANNOTATION_FIELDS = frozenset({"assignor", "duration_ms", "offloaded", "reason", "fenced"})
"""Event fields the server adds from what it remembers (a store does not say them)."""

CHANGES = ("assigned", "revoked")

CLIENT_REPORTED = frozenset({"client-assigned-partitions", "client-rebalanced"})
"""Events the members' clients reported in their telemetry pushes (KIP-714), merged into the
timeline by their own timestamps: what a client saw, not a change of the group
(``coordinator/telemetry/events.py`` makes them)."""

Partition = tuple[Any, ...]
"""``(topic, partition)``; for a streams group ``(task kind, subtopology, partition)``."""


class TimelineError(AssertionError):
    """A timeline assertion failed (an ``AssertionError``, so pytest shows it as one)."""


class Change(NamedTuple):
    """One acknowledged change of a member's assignment."""

    timestamp: int
    kind: str
    """``assigned`` or ``revoked``."""
    epoch: int | None
    partitions: frozenset[Partition]
    owned: frozenset[Partition]
    """What the member owns once the change is done."""
    removed: bool = False
    """A revocation because the member left the group (or was removed from it)."""


def partitions_of(event: Mapping[str, Any]) -> frozenset[Partition]:
    """The partitions of an ``assigned`` / ``revoked`` / ``revocation-requested`` event, as a
    set of ``(topic, partition)`` (streams: ``(kind, subtopology, partition)``)."""
    if "tasks" in event:
        return frozenset((kind, subtopology, p) for kind, by_sub in event["tasks"].items()
                         for subtopology, ps in by_sub.items() for p in ps)
    return frozenset((topic, p) for topic, ps in event.get("partitions", {}).items() for p in ps)


def record_view(events: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The events as a store says them (``log timeline``): without the events only the
    server's memory gives (they have no ``offset``) and without annotation fields."""
    return [{k: v for k, v in event.items() if k not in ANNOTATION_FIELDS}
            for event in events if "offset" in event]


def assert_no_partition_owned_twice(events: Iterable[Mapping[str, Any]]) -> None:
    """Replay the acknowledged assignments and revocations in time order (group by group):
    no partition is ever held by two members at once. Share groups share partitions by design
    and are skipped; for streams groups active tasks are checked."""
    owners: dict[tuple[str, Partition], str] = {}
    held: dict[tuple[str, str], set[Partition]] = {}
    ordered = sorted(enumerate(events), key=lambda pair: (pair[1]["timestamp"], pair[0]))
    for _, event in ordered:
        kind = event["kind"]
        if kind == "group-deleted":  # also a group changing type: its members start over
            for slot in [slot for slot in owners if slot[0] == event["group"]]:
                del owners[slot]
            for key in [key for key in held if key[0] == event["group"]]:
                del held[key]
            continue
        if event.get("group_type") == "share" or kind not in (*CHANGES, "member-left"):
            continue
        group, member = event["group"], event["member"]
        mine = held.setdefault((group, member), set())
        if kind == "member-left":
            for partition in mine:
                owners.pop((group, partition), None)
            mine.clear()
            continue
        for partition in partitions_of(event):
            if partition[0] in ("standby", "warmup"):
                continue
            slot = (group, partition)
            if kind == "revoked":
                if owners.get(slot) == member:
                    del owners[slot]
                mine.discard(partition)
                continue
            other = owners.get(slot)
            if other is not None and other != member:
                raise TimelineError(
                    f"{_show(partition)} of group {group} assigned to {member} at "
                    f"{event['timestamp']} while {other} still held it")
            owners[slot] = member
            mine.add(partition)


def _show(partition: Partition) -> str:
    return "-".join(str(part) for part in partition)


class Timeline:
    """One group's events (a snapshot), and where they came from (to fetch them again)."""

    def __init__(self, events: Iterable[Mapping[str, Any]], group: str | None = None,
                 source: Any = None) -> None:
        self.events: list[dict[str, Any]] = [dict(event) for event in events]
        if group is None:
            groups = {event["group"] for event in self.events}
            group = groups.pop() if len(groups) == 1 else None
        else:
            self.events = [event for event in self.events if event.get("group") == group]
        self.group = group
        self.source = source

    # --- getting one ----------------------------------------------------------------------------
    @classmethod
    def fetch(cls, source: Any, group: str, since: int | None = None,
              timeout: float = 10.0) -> Timeline:
        """``group``'s events from the control endpoint: ``source`` is its base URL
        (``http://127.0.0.1:PORT``) or a client that has it (``url`` or ``base_url``). A group
        the server has not seen has no events."""
        query = {"group": group} if since is None else {"group": group, "since": str(since)}
        url = f"{_base_url(source)}/timeline?{urllib.parse.urlencode(query)}"
        try:
            with urllib.request.urlopen(url, timeout=timeout) as response:
                body = json.load(response)
        except urllib.error.HTTPError as exc:
            if exc.code == 404:
                return cls([], group, source)
            raise
        return cls(body["events"], group, source)

    @classmethod
    def from_store(cls, log_dir: str | Path, group: str) -> Timeline:
        """``group``'s events as its records in a store (a server's ``log.dirs``, running or
        not) say them: what ``python -m coordinator log timeline`` prints."""
        from coordinator.groups.timeline_records import store_timeline

        return cls(store_timeline(log_dir, group), group)

    def refresh(self) -> Timeline:
        """The group's events now (from the same source)."""
        if self.source is None or self.group is None:
            raise ValueError("a timeline built from events has nowhere to fetch them from")
        return Timeline.fetch(self.source, self.group)

    def wait_until_stable(self, group: str | None = None, members: int | None = None,
                          timeout: float = 30.0, interval: float = 0.05,
                          while_waiting: Callable[[], object] | None = None) -> Timeline:
        """Fetch until ``group`` (this timeline's by default) is stable, with ``members``
        members if given: every member at the group's epoch holding its whole target (a
        classic group: its generation synced, no cooperative revocation to come), and nothing
        happened since. Returns that timeline; fails after ``timeout`` s. ``while_waiting`` is
        called between two fetches instead of sleeping ``interval`` (a synchronous client
        polls its consumers there: their rebalance callbacks run in ``poll``)."""
        group = group or self.group
        if group is None:
            raise ValueError("which group?")
        current = self if self.group == group else Timeline(self.events, group, self.source)
        deadline = time.monotonic() + timeout
        while not current.is_stable(members):
            if self.source is None:
                raise TimelineError(f"group {group} is not stable: {current.describe()}")
            if time.monotonic() > deadline:
                raise TimelineError(f"group {group} not stable with {members} members after "
                                    f"{timeout}s: {current.describe()}")
            if while_waiting is None:
                time.sleep(interval)
            else:
                while_waiting()
            current = Timeline.fetch(self.source, group)
        return current

    # --- reading it -----------------------------------------------------------------------------
    def __iter__(self) -> Iterator[dict[str, Any]]:
        return iter(self.events)

    def __len__(self) -> int:
        return len(self.events)

    def of_kind(self, *kinds: str) -> list[dict[str, Any]]:
        return [event for event in self.events if event["kind"] in kinds]

    def since(self, timestamp: int) -> Timeline:
        """The events at or after ``timestamp`` (ms)."""
        return Timeline([e for e in self.events if e["timestamp"] >= timestamp], self.group,
                        self.source)

    def members(self) -> set[str]:
        """The members in the group after the last event."""
        current: set[str] = set()
        for event in self.events:
            if event["kind"] == "member-joined":
                current.add(event["member"])
            elif event["kind"] == "member-left":
                current.discard(event["member"])
            elif event["kind"] == "group-deleted":
                current.clear()
        return current

    def is_stable(self, members: int | None = None) -> bool:
        """Whether the group's last event says it is stable (with ``members`` members). What
        the members' clients reported (``client-*`` events, from their telemetry pushes) is
        what they saw, not a change of the group: a push that lands after the group settled
        leaves it stable."""
        last = next((event for event in reversed(self.events)
                     if event["kind"] not in CLIENT_REPORTED), None)
        if last is None or last["kind"] != "group-stable":
            return False
        return members is None or last["members"] == members

    def rebalance_count(self) -> int:
        """How many rebalances the group went through: its epoch bumps (a classic group's
        generations), as Kafka's rebalance metrics count them."""
        return len(self.of_kind("epoch-bumped"))

    def assignment_history(self, member_id: str) -> list[Change]:
        """The member's acknowledged assignments and revocations, in order."""
        owned: frozenset[Partition] = frozenset()
        history = []
        for event in self.events:
            if event["kind"] not in CHANGES or event.get("member") != member_id:
                continue
            partitions = partitions_of(event)
            owned = owned | partitions if event["kind"] == "assigned" else owned - partitions
            history.append(Change(event["timestamp"], event["kind"], event.get("epoch"),
                                  partitions, owned, bool(event.get("removed"))))
        return history

    def owners(self) -> dict[Partition, set[str]]:
        """Who holds each partition after the last event (one member each, unless the group
        is a share group, or a streams group's standby tasks)."""
        out: dict[Partition, set[str]] = {}
        members = self.members()
        for member in members:
            history = self.assignment_history(member)
            for partition in history[-1].owned if history else ():
                out.setdefault(partition, set()).add(member)
        return out

    def assert_no_partition_owned_twice(self) -> None:
        assert_no_partition_owned_twice(self.events)

    def record_view(self) -> list[dict[str, Any]]:
        """The events a store says (see the module function)."""
        return record_view(self.events)

    def describe(self) -> str:
        """The last few events, one line each (for failure messages)."""
        tail = self.events[-8:]
        return "; ".join(f"{e['kind']}" + (f" {e['member']}" if "member" in e else "")
                         + (f" epoch {e['epoch']}" if "epoch" in e else "")
                         + (f" members {e['members']}" if "members" in e else "")
                         for e in tail) or "no events"

    def __repr__(self) -> str:
        return f"Timeline({self.group!r}, {len(self.events)} events)"


def wait_until_stable(source: Any, group: str, members: int | None = None,
                      timeout: float = 30.0,
                      while_waiting: Callable[[], object] | None = None) -> Timeline:
    """``Timeline.fetch(source, group).wait_until_stable(members=..., timeout=...)``."""
    return Timeline([], group, source).wait_until_stable(group, members, timeout,
                                                         while_waiting=while_waiting)


def _base_url(source: Any) -> str:
    if isinstance(source, str):
        return source.rstrip("/")
    for name in ("base_url", "url"):
        value = getattr(source, name, None)
        if isinstance(value, str):
            return value.rstrip("/")
    raise TypeError(f"not a control endpoint URL nor a client with one: {source!r}")
