"""Record type ids, and the one encoder/decoder of record keys and values.

Key bytes: ``int16 type id`` (Kafka's "key version") then the key fields.
Value bytes: ``int16 value version`` then the value fields; a tombstone is ``None``.
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from storage.codec import (
    compiled,
    encode_struct,
    field_decoder,
    fields_of,
    struct_from_json,
    struct_to_json,
)
from storage.errors import RecordDecodeError, UnknownRecordTypeError
from storage.records import (
    acls,
    classic,
    client_assignors,
    configs,
    consumer,
    group_config,
    imbalance,
    offsets,
    scram,
    share,
    streams,
    topics,
    transactions,
)

_HDR = struct.Struct(">h")


@dataclass(frozen=True, slots=True)
class RecordType:
    type_id: int
    name: str  # Kafka's record name without Key/Value, e.g. "ConsumerGroupTargetAssignmentMetadata"
    # record classes made by @codec: their TYPE_ID / VERSION and compiled codec are class
    # attributes the checker cannot see on a plain ``type``
    key_cls: type[Any]
    value_cls: type[Any]


def _pairs() -> list[tuple[type[Any], type[Any]]]:
    pairs: list[tuple[type[Any], type[Any]]] = []
    for module in (offsets, classic, consumer, share, streams, topics, group_config, acls,
                   scram, transactions, configs, client_assignors, imbalance):
        for name, obj in vars(module).items():
            if name.endswith("Key") and isinstance(obj, type) and hasattr(obj, "TYPE_ID"):
                value_cls = getattr(module, name[: -len("Key")] + "Value")
                pairs.append((obj, value_cls))
    return pairs


def _build() -> dict[int, RecordType]:
    types: dict[int, RecordType] = {}
    for key_cls, value_cls in _pairs():
        rt = RecordType(key_cls.TYPE_ID, key_cls.__name__[: -len("Key")], key_cls, value_cls)
        if rt.type_id in types:  # pragma: no cover - a programming error
            raise RuntimeError(f"duplicate record type id {rt.type_id}")
        types[rt.type_id] = rt
    return dict(sorted(types.items()))


RECORD_TYPES: dict[int, RecordType] = _build()
"""Every record type this build writes, by type id."""



def _deltas() -> dict[int, int]:
    deltas: dict[int, int] = {}
    for rt in RECORD_TYPES.values():
        snapshot_id = getattr(rt.key_cls, "SNAPSHOT_TYPE_ID", None)
        if snapshot_id is None:
            continue
        snapshot = RECORD_TYPES[snapshot_id]
        same = [(s.kind, s.attr) for s in fields_of(rt.key_cls)] == [
            (s.kind, s.attr) for s in fields_of(snapshot.key_cls)
        ]
        if not same:  # pragma: no cover - a programming error
            raise RuntimeError(f"{rt.name} is a delta of {snapshot.name} but their keys differ")
        deltas[rt.type_id] = snapshot_id
    return deltas


DELTA_TYPES: dict[int, int] = _deltas()
"""Delta record type id -> the snapshot type id it is a delta of (ShareUpdate -> ShareSnapshot).

A key class declares it with ``SNAPSHOT_TYPE_ID``; both keys have the same fields, so their key
bytes differ only in the 2-byte type id. Compaction keeps every record of a delta type until a
later record of its snapshot type with the same key fields exists (value or tombstone); deltas
never supersede each other."""

DELTA_KEY_PREFIXES: dict[bytes, bytes] = {
    _HDR.pack(delta): _HDR.pack(snapshot) for delta, snapshot in DELTA_TYPES.items()
}
""":data:`DELTA_TYPES` as the 2-byte key prefixes compaction compares."""

# Kafka writes offset commits with key version 1 and reads the legacy version 0 too.
_DECODE_TYPES: dict[int, RecordType] = {**RECORD_TYPES, 0: RECORD_TYPES[1]}
_BY_KEY_CLS: dict[type, RecordType] = {rt.key_cls: rt for rt in RECORD_TYPES.values()}
KEY_PREFIXES: dict[bytes, RecordType] = {_HDR.pack(tid): rt for tid, rt in _DECODE_TYPES.items()}
"""The record type of each 2-byte key prefix (type id) this build reads, the legacy ones too."""
_BY_NAME: dict[str, RecordType] = {rt.name: rt for rt in RECORD_TYPES.values()}


def record_type_of(key: Any) -> RecordType:
    """The :class:`RecordType` of a key object."""
    try:
        return _BY_KEY_CLS[type(key)]
    except KeyError:
        raise TypeError(f"not a record key: {type(key).__name__}") from None


def record_type(type_id_or_name: int | str) -> RecordType:
    try:
        if isinstance(type_id_or_name, str):
            return _BY_NAME[type_id_or_name]
        return _DECODE_TYPES[type_id_or_name]
    except KeyError:
        raise UnknownRecordTypeError(f"unknown record type {type_id_or_name!r}") from None


def encode_key(key: Any) -> bytes:
    out = bytearray(_HDR.pack(record_type_of(key).type_id))
    encode_struct(key, out)
    return bytes(out)


def encode_value(value: Any | None) -> bytes | None:
    """Encode a record value; ``None`` (a tombstone) stays ``None``."""
    if value is None:
        return None
    out = bytearray(_HDR.pack(type(value).VERSION))
    encode_struct(value, out)
    return bytes(out)


def encode_record(key: Any, value: Any | None) -> tuple[bytes, bytes | None]:
    """Encode a (key, value) pair; checks that the value belongs to the key's type."""
    rt = record_type_of(key)
    if value is not None and type(value) is not rt.value_cls:
        raise TypeError(f"{type(value).__name__} is not the value of {rt.name}")
    return encode_key(key), encode_value(value)


def key_type_id(key_bytes: bytes) -> int:
    """The type id of encoded key bytes, without decoding the key."""
    if len(key_bytes) < 2:
        raise RecordDecodeError("record key shorter than its type id")
    type_id: int = _HDR.unpack_from(key_bytes)[0]
    return type_id


# type id -> (name, key decoder, value decoder, newest value version); the replay hot path.
# Filled on first use of a type: its decoders are generated then (``storage.codec.compiled``).
_DECODERS: dict[int, tuple[str, Any, Any, int]] = {}


def _decoders(type_id: int) -> tuple[str, Any, Any, int]:
    try:
        return _DECODERS[type_id]
    except KeyError:
        pass
    rt = _DECODE_TYPES.get(type_id)
    if rt is None:
        raise UnknownRecordTypeError(f"unknown record type {type_id!r}")
    found = _DECODERS[type_id] = (rt.name, compiled(rt.key_cls)._codec_decode_body,
                                  compiled(rt.value_cls)._codec_decode_body, rt.value_cls.VERSION)
    return found


def decode_key(key_bytes: bytes) -> Any:
    name, kdec, _, _ = _decoders(key_type_id(key_bytes))
    key, pos = kdec(key_bytes, 2, 0)
    if pos != len(key_bytes):
        raise RecordDecodeError(f"{name} key: {len(key_bytes) - pos} trailing bytes")
    return key


def decode_value(type_id: int, value_bytes: bytes | None) -> Any | None:
    """Decode the value bytes of a record of ``type_id``; ``None`` is a tombstone."""
    if value_bytes is None:
        return None
    name, _, vdec, newest = _decoders(type_id)
    if len(value_bytes) < 2:
        raise RecordDecodeError(f"{name} value shorter than its version")
    version = (value_bytes[0] << 8) | value_bytes[1]
    if version > newest:
        raise RecordDecodeError(
            f"{name} value version {version} is not supported (this build reads 0..{newest})"
        )
    value, pos = vdec(value_bytes, 2, version)
    if pos != len(value_bytes):
        raise RecordDecodeError(f"{name} value: {len(value_bytes) - pos} trailing bytes")
    return value


def decode_record(key_bytes: bytes, value_bytes: bytes | None) -> tuple[Any, Any | None]:
    """Decode a stored record into (key, value-or-None)."""
    # decode_key + decode_value inlined: this is the replay hot path
    if len(key_bytes) < 2:
        raise RecordDecodeError("record key shorter than its type id")
    name, kdec, vdec, newest = _decoders((key_bytes[0] << 8) | key_bytes[1])
    key, pos = kdec(key_bytes, 2, 0)
    if pos != len(key_bytes):
        raise RecordDecodeError(f"{name} key: {len(key_bytes) - pos} trailing bytes")
    if value_bytes is None:
        return key, None
    if len(value_bytes) < 2:
        raise RecordDecodeError(f"{name} value shorter than its version")
    version = (value_bytes[0] << 8) | value_bytes[1]
    if version > newest:
        raise RecordDecodeError(
            f"{name} value version {version} is not supported (this build reads 0..{newest})"
        )
    value, pos = vdec(value_bytes, 2, version)
    if pos != len(value_bytes):
        raise RecordDecodeError(f"{name} value: {len(value_bytes) - pos} trailing bytes")
    return key, value


FieldsDecoder = Callable[[bytes, "bytes | None"], tuple[tuple[Any, ...], "tuple[Any, ...] | None"]]
"""(key bytes, value bytes or None) -> (the key fields asked for, the value fields asked for or
None for a tombstone)."""


def fields_decoder(key_cls: type[Any], key_attrs: Sequence[str], value_attrs: Sequence[str]
                   ) -> tuple[frozenset[bytes], FieldsDecoder]:
    """:func:`decode_record` for the records of one type, into tuples of the fields named
    (``storage.codec.field_decoder``) instead of objects, with the same checks and errors; and
    the 2-byte key prefixes (type ids) of that type, which the caller dispatches on (the
    decoder does not look at the type id)."""
    rt = record_type_of_class(key_cls)
    name, newest = rt.name, rt.value_cls.VERSION
    kdec = field_decoder(rt.key_cls, key_attrs)
    vdec = field_decoder(rt.value_cls, value_attrs)

    def decode(key_bytes: bytes, value_bytes: bytes | None
               ) -> tuple[tuple[Any, ...], tuple[Any, ...] | None]:
        key, pos = kdec(key_bytes, 2, 0)
        if pos != len(key_bytes):
            raise RecordDecodeError(f"{name} key: {len(key_bytes) - pos} trailing bytes")
        if value_bytes is None:
            return key, None
        if len(value_bytes) < 2:
            raise RecordDecodeError(f"{name} value shorter than its version")
        version = (value_bytes[0] << 8) | value_bytes[1]
        if version > newest:
            raise RecordDecodeError(
                f"{name} value version {version} is not supported (this build reads 0..{newest})"
            )
        value, pos = vdec(value_bytes, 2, version)
        if pos != len(value_bytes):
            raise RecordDecodeError(f"{name} value: {len(value_bytes) - pos} trailing bytes")
        return key, value

    prefixes = frozenset(prefix for prefix, t in KEY_PREFIXES.items() if t is rt)
    return prefixes, decode


def record_type_of_class(key_cls: type[Any]) -> RecordType:
    """The :class:`RecordType` of a key class."""
    try:
        return _BY_KEY_CLS[key_cls]
    except KeyError:
        raise TypeError(f"not a record key class: {key_cls.__name__}") from None


def record_to_json(key: Any, value: Any | None) -> dict[str, Any]:
    """``{"type": name, "key": {...}, "value": {...} | None}`` with Kafka's field names."""
    rt = record_type_of(key)
    return {
        "type": rt.name,
        "key": struct_to_json(key),
        "value": None if value is None else struct_to_json(value),
    }


def record_from_json(data: dict[str, Any]) -> tuple[Any, Any | None]:
    """Inverse of :func:`record_to_json`."""
    rt = record_type(data["type"])
    key = struct_from_json(rt.key_cls, data["key"])
    value = data.get("value")
    return key, None if value is None else struct_from_json(rt.value_cls, value)
