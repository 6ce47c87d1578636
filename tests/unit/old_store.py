"""A small store of consumer, share and streams group records, and what loading it gives.

``write(path)`` drives the three group types through their handlers in virtual time (members
joining, reconciling, one mid-revocation, a static member, share-state initialization, a streams
topology with standbys and an endpoint), writes every record as its key and value bytes, and
writes beside it (``<path>.json``) what loading those bytes gives: each group's replayed state
and the answers after the load (describe, one heartbeat per member). ``tests/unit/data/
store-c54b1b8.records`` was written by this module run with the tree of commit c54b1b8, before
the consumer, share and streams groups shared one core (``coordinator/groups/modern/``):

    PYTHONPATH=<c54b1b8 tree> python tests/unit/old_store.py tests/unit/data/store-c54b1b8

``tests/unit/test_old_store.py`` loads it with today's code and compares. Only the contexts of
``coordinator.testing`` and the group objects' attributes are used, so that the same module runs
against both trees."""

from __future__ import annotations

import dataclasses
import enum
import json
import struct
import sys
import uuid
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from coordinator.groups.consumer.describe import describe as consumer_describe
from coordinator.groups.replay import new_shard
from coordinator.groups.share.describe import describe as share_describe
from coordinator.groups.streams.describe import describe as streams_describe
from coordinator.runtime import CoordinatorError
from coordinator.testing.consumer_group_context import ConsumerGroupContext
from coordinator.testing.share_group_context import ShareGroupContext
from coordinator.testing.streams_group_context import (
    G,
    StreamsGroupContext,
    subtopology,
    topology,
)
from storage.records import decode_record, encode_record

NOW_MS = 1_000_000


# ------------------------------------------------------------------------------ the groups
def consumer_records() -> tuple[ConsumerGroupContext, list[tuple[Any, Any]]]:
    ctx = ConsumerGroupContext(now_ms=NOW_MS)
    ctx.create_topic("orders", 6)
    ctx.create_topic("payments", 3)
    a = ctx.heartbeat("cg", "a", 0, topics=["orders", "payments"], rebalance_timeout_ms=45_000)
    b = ctx.heartbeat("cg", "b", 0, topics=["orders"], instance_id="static-b", rack_id="r1")
    ctx.heartbeat("cg", "a", a.member_epoch, owned=ctx.named(a.assignment) or {})
    ctx.heartbeat("cg", "b", b.member_epoch, owned=ctx.named(b.assignment) or {})
    ctx.heartbeat("cg", "c", 0, topics=["orders"])  # a and b now have partitions to revoke
    ctx.heartbeat("cg", "a", ctx.member("a", "cg").member_epoch, owned={})
    ctx.heartbeat("empty", "x", 0, topics=["payments"])
    ctx.heartbeat("empty", "x", -1)
    return ctx, list(ctx.written)


def share_records() -> tuple[ShareGroupContext, list[tuple[Any, Any]]]:
    ctx = ShareGroupContext(now_ms=NOW_MS)
    ctx.create_topic("work", 4)
    first = ctx.heartbeat("sg", "s1", 0, ["work"])
    ctx.heartbeat("sg", "s2", 0, ["work"])
    ctx.heartbeat("sg", "s1", first.member_epoch)
    ctx.heartbeat("sg2", "t1", 0, ["work"])
    return ctx, [(w.key, w.value) for w in ctx.written]


def streams_records() -> tuple[StreamsGroupContext, list[tuple[Any, Any]]]:
    ctx = StreamsGroupContext(now_ms=NOW_MS)
    ctx.create_topic("input", 4)
    ctx.create_topic("app-store-changelog", 4)
    ctx.topology = topology(subtopology("0", ("input",), changelogs=("app-store-changelog",)))
    ctx.set_group_config(streams_num_standby_replicas=1)
    a = ctx.client("a", process_id="p1", rebalance_timeout_ms=20_000)
    b = ctx.client("b", process_id="p2")
    a.join()
    b.join()
    ctx.converge(a, b)
    c = ctx.client("c", process_id="p1")
    c.join()
    a.heartbeat(hold=True)
    return ctx, [(w.key, w.value) for w in ctx.written]


# ------------------------------------------------------------------------------ the store
def encode(records: list[tuple[Any, Any]]) -> bytes:
    out = bytearray()
    for key, value in records:
        key_bytes, value_bytes = encode_record(key, value)
        out += struct.pack(">i", len(key_bytes)) + key_bytes
        if value_bytes is None:
            out += struct.pack(">i", -1)
        else:
            out += struct.pack(">i", len(value_bytes)) + value_bytes
    return bytes(out)


def decode(data: bytes) -> Iterator[tuple[int, Any, Any]]:
    """(offset, key, value) of each record in ``data``, decoded."""
    pos = offset = 0
    while pos < len(data):
        (size,) = struct.unpack_from(">i", data, pos)
        key_bytes = data[pos + 4:pos + 4 + size]
        pos += 4 + size
        (size,) = struct.unpack_from(">i", data, pos)
        pos += 4
        value_bytes = None if size < 0 else data[pos:pos + size]
        pos += max(size, 0)
        key, value = decode_record(key_bytes, value_bytes)
        yield offset, key, value
        offset += 1


def loaded(data: bytes) -> Any:
    shard = new_shard(0)
    for offset, key, value in decode(data):
        shard.replay(offset, key, value)
    return shard


# ------------------------------------------------------------------------------ what it gives
def plain(value: Any) -> Any:
    """``value`` as JSON values, the same for equal state whatever the classes are called."""
    if isinstance(value, enum.Enum):
        return plain(value.value)
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(plain(k)): plain(v)
                for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, frozenset | set):
        return sorted((plain(v) for v in value), key=str)
    if isinstance(value, list | tuple):
        return [plain(v) for v in value]
    if isinstance(value, uuid.UUID | bytes):
        return str(value)
    if value is None or isinstance(value, str | int | float):
        return value
    slots = [name for cls in type(value).__mro__ for name in getattr(cls, "__slots__", ())]
    assert slots, f"no plain form for {type(value).__name__}"
    return {name: plain(getattr(value, name)) for name in slots if hasattr(value, name)}


GROUP_FIELDS = ("group_epoch", "assignment_epoch", "assignment_timestamp", "metadata_hash",
                "subscription_metadata", "target", "initialized", "validated_topology_epoch",
                "assignment_configs", "topology", "resolved_regexes")


def state(shard: Any) -> dict[str, Any]:
    """Each group's replayed state: its type, its persisted fields, its members, its state."""
    out: dict[str, Any] = {}
    for gid, group in sorted(shard.groups.items()):
        out[gid] = {
            "type": type(group).__name__,
            "state": plain(group.state),
            "fields": {name: plain(getattr(group, name)) for name in GROUP_FIELDS
                       if hasattr(group, name)},
            "members": {mid: plain(member) for mid, member in sorted(group.members.items())},
        }
    return out


def _answer(call: Any) -> Any:
    try:
        return plain(call())
    except CoordinatorError as exc:
        return {"error": exc.code.name}


def answers(data: bytes) -> dict[str, Any]:
    """What the loaded store answers: describes, and one heartbeat of each member at its epoch
    (consumer members report what they own; a streams member reports nothing new)."""
    out: dict[str, Any] = {}
    consumer = ConsumerGroupContext(now_ms=NOW_MS + 1000)
    consumer.create_topic("orders", 6)
    consumer.create_topic("payments", 3)
    consumer.shard = loaded(data)
    consumer.shard.on_loaded(consumer.now)
    out["consumer.describe"] = _answer(lambda: consumer_describe(consumer.shard, "cg", "uniform"))
    for mid in sorted(consumer.group("cg").members):
        member = consumer.member(mid, "cg")
        answer = _answer(lambda m=member: consumer.heartbeat(
            "cg", m.member_id, m.member_epoch, owned=consumer.named(m.assigned_partitions),
            instance_id=m.instance_id))
        if answer.get("should_compute_assignment") is False:  # the draft's (seed 003), added
            del answer["should_compute_assignment"]  # later: False for an old store's group
        out[f"consumer.heartbeat.{mid}"] = answer
    share = ShareGroupContext(now_ms=NOW_MS + 1000)
    share.create_topic("work", 4)
    share.shard = loaded(data)
    share.load()
    out["share.describe"] = _answer(lambda: share_describe(share.shard, "sg", "simple"))
    for mid in sorted(share.group("sg").members):
        epoch = share.group("sg").members[mid].member_epoch
        out[f"share.heartbeat.{mid}"] = _answer(lambda m=mid, e=epoch: share.heartbeat(
            "sg", m, e))
    streams = StreamsGroupContext(now_ms=NOW_MS + 1000)
    streams.create_topic("input", 4)
    streams.create_topic("app-store-changelog", 4)
    streams.shard = loaded(data)
    streams.load()
    out["streams.describe"] = _answer(lambda: streams_describe(streams.shard, G))
    for mid in sorted(streams.group(G).members):
        epoch = streams.member(mid).member_epoch
        out[f"streams.heartbeat.{mid}"] = _answer(lambda m=mid, e=epoch: streams.heartbeat(
            m, e))
    return out


def write(path: Path) -> None:
    records = consumer_records()[1] + share_records()[1] + streams_records()[1]
    data = encode(records)
    path.with_suffix(".records").write_bytes(data)
    expected = {"state": state(loaded(data)), "answers": answers(data)}
    path.with_suffix(".json").write_text(json.dumps(expected, indent=1, sort_keys=True) + "\n")


if __name__ == "__main__":
    write(Path(sys.argv[1]))
