"""A partition's state loaded from a snapshot and the log after it is the state a full replay of
the log gives: a hypothesis property over random record sequences of every replayed type,
in-process, in virtual time.

The sequences keep the rules Kafka's coordinators keep when they write (and which log
compaction relies on): a group's records come after its group record and are tombstoned before
it, a member's records likewise with its member record; a group's other records are tombstoned
with their member or their group (a regex alone). Within that, anything goes: values,
tombstones, ShareUpdate deltas, several groups and members per key type.
The snapshot goes through its file format (``storage.snapshot.encode`` / ``decode``), and the tail
is read as a load reads it (latest record per key, every record of the timeline's group types).
"""

from __future__ import annotations

import enum
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from coordinator.groups.replay import REPLAYERS, new_shard
from coordinator.groups.timeline_records import GROUP_OF
from coordinator.runtime import TimerQueue
from storage import snapshot
from storage.codec import (
    BOOL,
    BYTES,
    FLOAT64,
    INT8,
    INT16,
    INT32,
    INT64,
    NBYTES,
    NSTRING,
    NUUID,
    STRING,
    STRING_MAP,
    UINT16,
    UUID,
    Array,
    Kind,
    NStruct,
    Struct,
    fields_of,
)
from storage.log import LogRecord
from storage.records import RECORD_TYPES, decode_record, encode_record
from storage.replay import LatestRecords, decode_records

TOPICS = [uuid.UUID(int=1), uuid.UUID(int=2)]
GROUP_KEYS = ("group", "group_id")
FAMILY_OF_PREFIX = (("ConsumerGroup", "consumer"), ("ShareGroup", "share"),
                    ("StreamsGroup", "streams"), ("GroupMetadata", "classic"))
ROOT_TYPES = {"ConsumerGroupMetadata", "ShareGroupMetadata", "StreamsGroupMetadata"}
"""A group's own record: written with (before) the group's first other record, and its
tombstone only once the group's other records are gone."""

REPLAYED = sorted((rt for rt in RECORD_TYPES.values() if rt.key_cls in REPLAYERS),
                  key=lambda rt: rt.type_id)
TIMELINE_TYPES = frozenset(rt.type_id for rt in RECORD_TYPES.values() if rt.key_cls in GROUP_OF)


def family(name: str) -> str | None:
    """The group type whose group ids a record type's key names (None: any group's)."""
    for prefix, fam in FAMILY_OF_PREFIX:
        if name.startswith(prefix):
            return fam
    return None


PRIMITIVES: dict[Kind, st.SearchStrategy[Any]] = {
    INT8: st.integers(0, 2), INT16: st.integers(0, 2), UINT16: st.integers(0, 2),
    INT32: st.integers(-1, 3), INT64: st.integers(-1, 3), BOOL: st.booleans(),
    FLOAT64: st.sampled_from([0.0, 1.5]), STRING: st.sampled_from(["", "a", "b"]),
    NSTRING: st.sampled_from([None, "a", "b"]), BYTES: st.just(b""), NBYTES: st.just(b""),
    UUID: st.sampled_from(TOPICS), NUUID: st.sampled_from([None, *TOPICS]),
    STRING_MAP: st.dictionaries(st.sampled_from(["k1", "k2"]), st.sampled_from(["1", "2"]),
                                max_size=2),
}
COUNT = st.integers(0, 2)
MEMBER = st.sampled_from(["m1", "m2"])
KEY_INT = st.integers(0, 1)
FLAG = st.booleans()


ROOT_OF = {family(rt.name): rt for rt in RECORD_TYPES.values() if rt.name in ROOT_TYPES}
MEMBER_ROOTS = {"ConsumerGroupMemberMetadata", "ShareGroupMemberMetadata",
                "StreamsGroupMemberMetadata"}
"""A member's own record: written before its other records, tombstoned after them."""
MEMBER_ROOT_OF = {family(rt.name): rt for rt in RECORD_TYPES.values() if rt.name in MEMBER_ROOTS}
ALONE = {"ConsumerGroupRegularExpression"}
"""A group's records Kafka tombstones on their own (a regex no member subscribes to any more);
the others go with their member or their group."""
GROUP_TYPE = st.sampled_from(["classic", "consumer", "share"])
RECORD_TYPE = st.sampled_from(REPLAYED)
LENGTH = st.integers(1, 60)
GROUP_NUMBER = st.integers(0, 1)
ACTION = st.sampled_from(["put", "put", "put", "tombstone"])


def value_of(kind: Kind, draw: Callable[[st.SearchStrategy[Any]], Any], owner: int = 0) -> Any:
    """A small random value of a field kind (small ranges, so that keys collide). ``owner``:
    partitions in arrays are ``2 * n + owner``, so two members never hold the same one (Kafka
    never assigns a partition to two members of a group)."""
    if owner and isinstance(kind, Array) and kind.elem is INT32:
        return tuple(2 * draw(COUNT) + owner - 1 for _ in range(draw(COUNT)))
    primitive = PRIMITIVES.get(kind)
    if primitive is not None:
        return draw(primitive)
    if isinstance(kind, Array):
        return tuple(value_of(kind.elem, draw, owner) for _ in range(draw(COUNT)))
    if isinstance(kind, NStruct) and draw(FLAG):
        return None
    if isinstance(kind, Struct):
        return struct_of(kind.cls, draw, owner=owner)
    raise AssertionError(f"no strategy for {kind!r}")


def struct_of(cls: type, draw: Callable[[st.SearchStrategy[Any]], Any],
              group_id: str | None = None, owner: int = 0) -> Any:
    fields: dict[str, Any] = {}
    for spec in fields_of(cls):
        if group_id is not None and spec.attr in GROUP_KEYS:
            fields[spec.attr] = group_id
        elif group_id is not None and spec.kind is STRING:  # member ids, topics, ...
            fields[spec.attr] = draw(MEMBER)
        elif group_id is not None and spec.kind in (INT32, INT64):  # partitions, producers
            fields[spec.attr] = draw(KEY_INT)
        elif group_id is not None and spec.kind is UUID:  # topic ids
            fields[spec.attr] = TOPICS[0]
        else:
            fields[spec.attr] = value_of(spec.kind, draw, owner)
        if owner and spec.attr == "instance_id":  # a member's own, for its lifetime
            fields[spec.attr] = f"instance-{owner}"
    return cls(**fields)


def group_of(key: Any) -> str | None:
    return getattr(key, "group_id", getattr(key, "group", None))


def root_key(fam: str | None, group: str) -> Any | None:
    """The group record of ``group`` (None for types without one: classic, offsets, ...)."""
    root = ROOT_OF.get(fam or "")
    return None if root is None else root.key_cls(group_id=group)


def member_root(key: Any) -> Any | None:
    """The member metadata record a member's other records hang on (None: not a member's)."""
    member_id = getattr(key, "member_id", None)
    fam = family(type(key).__name__[:-3])
    if member_id is None or fam is None:
        return None
    root = MEMBER_ROOT_OF[fam]
    return None if type(key) is root.key_cls else root.key_cls(group_id=key.group_id,
                                                               member_id=member_id)


@st.composite
def sequences(draw: Callable[[st.SearchStrategy[Any]], Any]) -> list[tuple[Any, Any]]:
    """A random sequence of (key, value-or-None) records Kafka's way: a group's records come
    after its group record, a member's after its member record, and they go in Kafka's order
    (a member's records, then the member; a group's members and records, then the group)."""
    out: list[tuple[Any, Any]] = []
    live: dict[Any, Any] = {}  # key -> its latest value (keys whose latest is not a tombstone)

    def put(key: Any, value: Any) -> None:
        out.append((key, value))
        live[key] = value

    def remove(keys: list[Any]) -> None:
        # a member's records, then members, then the group's other records, then the group
        order = {True: 0, False: 1}
        for key in sorted(keys, key=lambda k: (order[member_root(k) is not None],
                                               type(k).__name__ in MEMBER_ROOTS,
                                               type(k).__name__[:-3] in ROOT_TYPES)):
            out.append((key, None))
            live.pop(key, None)

    for _ in range(draw(LENGTH)):
        rt = draw(RECORD_TYPE)
        fam = family(rt.name)
        group = f"{fam or draw(GROUP_TYPE)}-{draw(GROUP_NUMBER)}"
        key = struct_of(rt.key_cls, draw, group)
        action = draw(ACTION)
        name = rt.name
        if action == "tombstone" and name in ROOT_TYPES:  # delete the group
            remove([k for k in live if group_of(k) == group
                    and family(type(k).__name__[:-3]) == fam])
            out.append((key, None))
        elif action == "tombstone" and name in MEMBER_ROOTS:  # remove the member
            remove([k for k in live if member_root(k) == key] + [key])
        elif action == "tombstone" and (fam in (None, "classic") or name in ALONE):
            remove([key])  # a record Kafka tombstones on its own
        else:
            root = root_key(fam, group)
            if root is not None and root != key and root not in live:
                put(root, struct_of(ROOT_OF[fam or ""].value_cls, draw))
            member = member_root(key)
            if member is not None and member not in live:
                put(member, struct_of(MEMBER_ROOT_OF[fam or ""].value_cls, draw))
            owner = {"m1": 1, "m2": 2}.get(getattr(key, "member_id", ""), 0)
            put(key, struct_of(rt.value_cls, draw, owner=owner))
    return out


# ------------------------------------------------------------------------- comparing states
SKIPPED = {"timers", "replayers", "load_hooks", "share_sessions", "last_offset",
           "assignment_forms", "job_targets"}
"""Attributes that are not replayed state: the shard's timers are compared by their keys and
deadlines; ``last_offset`` is the last record replayed, which a load that skips superseded
records does not replay; a consumer group's ``assignment_forms`` and ``job_targets`` are
caches of forms already built (they may still hold a superseded record's)."""


def state_of(obj: Any, seen: set[int] | None = None) -> Any:
    """``obj`` as plain, comparable values: dicts compare without their order (Kafka's
    coordinators keep these in hash maps), sequences with it."""
    seen = set() if seen is None else seen
    if obj is None or isinstance(obj, bool | int | float | str | bytes | uuid.UUID | enum.Enum):
        return obj
    if isinstance(obj, TimerQueue):
        return sorted((repr(k), obj.deadline(k)) for k in obj._by_key)
    if id(obj) in seen:
        return ("<cycle>", type(obj).__name__)
    seen = seen | {id(obj)}
    if isinstance(obj, dict):
        return sorted(((repr(state_of(k, seen)), state_of(v, seen)) for k, v in obj.items()),
                      key=lambda kv: kv[0])
    if isinstance(obj, list | tuple) or type(obj).__name__ == "deque":
        return [state_of(v, seen) for v in obj]
    if isinstance(obj, set | frozenset):
        return sorted(repr(state_of(v, seen)) for v in obj)
    if callable(obj) and not hasattr(obj, "__dict__") and not hasattr(obj, "__slots__"):
        return ("<callable>",)
    attrs: dict[str, Any] = {}
    for cls in type(obj).__mro__:
        for name in getattr(cls, "__slots__", ()):
            if hasattr(obj, name):
                attrs[name] = getattr(obj, name)
    attrs.update(getattr(obj, "__dict__", {}))
    return (type(obj).__name__,
            {name: state_of(value, seen) for name, value in sorted(attrs.items())
             if name not in SKIPPED and not callable(value)})


def difference(a: Any, b: Any, path: str = "shard") -> str | None:
    """Where two states first differ (for the assertion message)."""
    if type(a) is not type(b):
        return f"{path}: {a!r} != {b!r}"
    if isinstance(a, list) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found = difference(x, y, f"{path}[{i}]")
            if found:
                return found
        return None
    if isinstance(a, tuple) and len(a) == len(b):
        for i, (x, y) in enumerate(zip(a, b, strict=True)):
            found = difference(x, y, f"{path}.{a[0] if i else ''}")
            if found:
                return found
        return None
    if isinstance(a, dict) and a.keys() == b.keys():
        for k in a:
            found = difference(a[k], b[k], f"{path}.{k}")
            if found:
                return found
        return None
    return None if a == b else f"{path}: {a!r} != {b!r}"


def loaded(records: list[tuple[int, int, Any, Any]]) -> Any:
    shard = new_shard(0)
    for offset, _ts, key, value in records:
        shard.replay(offset, key, value)
    shard.on_loaded(NOW)
    return state_of(shard)


NOW = 1_700_000_000_000


def raw(sequence: list[tuple[Any, Any]]) -> list[LogRecord]:
    return [(offset, NOW - 1000 + offset, *encode_record(key, value))
            for offset, (key, value) in enumerate(sequence)]


def with_snapshot(records: list[LogRecord], cut: int) -> list[tuple[int, int, Any, Any]]:
    """What a load replays: the snapshot of ``records[:cut]`` (through its file format), then
    the latest records of the rest, every timeline group record kept."""
    prefix = LatestRecords()
    prefix.add_all(records[:cut])
    data = snapshot.encode(0, cut, NOW, prefix.result(drop_tombstones_before=NOW - 86_400_000))
    stored = snapshot.decode(Path(snapshot.snapshot_name(cut)), data, 0)
    tail = LatestRecords(TIMELINE_TYPES)
    tail.add_all(records[cut:])
    return decode_records(stored.records) + decode_records(tail.result())


@pytest.mark.slow
@settings(max_examples=200, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(sequences(), st.data())
def test_a_snapshot_and_the_log_after_it_give_the_state_of_a_full_replay(
        sequence: list[tuple[Any, Any]], data: st.DataObject) -> None:
    records = raw(sequence)
    cut = data.draw(st.integers(0, len(records)), label="snapshot end offset")
    full = loaded([(o, ts, *decode_record(k, v)) for o, ts, k, v in records])
    from_snapshot = loaded(with_snapshot(records, cut))
    assert from_snapshot == full, difference(from_snapshot, full)


def test_every_replayed_record_type_is_in_the_sequences() -> None:
    """The property covers every type the replay table knows, so a type added later is in it
    (and in snapshots, which hold records whatever their type)."""
    assert {rt.key_cls for rt in REPLAYED} == set(REPLAYERS)
