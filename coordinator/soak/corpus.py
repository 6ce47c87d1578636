"""Valid requests of every API the server serves, with random but well-typed field values.

The APIs and versions come from the registry at run time (``build_registry().specs()``), so an
API added to it is fuzzed without a change here. Values are drawn per Kafka type from kio's
field metadata: edge values of each integer width, a small pool of names (so requests meet the
same topics and groups, and configs such as ``cleanup.policy=compact``), nulls where a field is
nullable, arrays of zero to three elements; a records field is random bytes or a valid batch of
keyed records, tombstones and keyless records (what a compacted topic's cleaner and key check
meet).
"""

from __future__ import annotations

import datetime
import random
import uuid
from collections.abc import Sequence
from dataclasses import Field, fields
from typing import Any

from kio.serial._introspect import (
    EntityField,
    EntityTupleField,
    PrimitiveField,
    PrimitiveTupleField,
    classify_field,
    is_optional,
)

import protocol
from coordinator.apis import build_registry
from coordinator.topiclog.records import build_batch
from protocol import ApiKey
from protocol.legacy import LEGACY_APIS, encode_legacy_request

from . import otlp_corpus

__all__ = ["Served", "random_body", "random_request", "served"]

Served = tuple[int, int]
"""(api key, version)."""

NAMES = ("", "fz-0", "fz-1", "fz-2", "fuzz-group", "g1", "consumer", "range", "uniform",
         "__consumer_offsets", "__share_group_state", "__transaction_state", "member-1", "tx-1",
         "fz-auto", "cleanup.policy", "compact",
         "compact,delete", "delete.retention.ms", "min.cleanable.dirty.ratio", "segment.ms")
_INT_EDGES = {
    "int8": (-(2**7), 2**7 - 1),
    "int16": (-(2**15), 2**15 - 1),
    "int32": (-(2**31), 2**31 - 1),
    "int64": (-(2**63), 2**63 - 1),
    "uint16": (0, 2**16 - 1),
}
_SMALL = (-1, 0, 0, 1, 1, 2, 3, 5, 100, 1000)


def served(client_assignors: bool = False) -> list[Served]:
    """Every (api key, version) the registry advertises, the versions Kafka 4.0 removed
    included; with ``client_assignors``, the KIP-848 draft's APIs a server with
    ``group.consumer.client.assignors.enable`` serves too."""
    registry = build_registry(client_assignors=client_assignors)
    return [(int(spec.key), version) for spec in registry.specs()
            for version in registry.versions(spec)]


def random_request(rng: random.Random, api_key: int, version: int, correlation_id: int,
                   client_id: str) -> bytes:
    """A whole request frame of ``random_body``'s values; a version Kafka 4.0 removed is
    written by ``protocol/legacy.py`` from a body of the API's base version."""
    legacy = LEGACY_APIS.get(api_key)
    if legacy is None or not legacy.serves(version):
        return protocol.encode_request(random_body(rng, api_key, version), correlation_id,
                                       client_id)
    body = random_body(rng, api_key, legacy.base)
    try:
        return encode_legacy_request(legacy, version, body, correlation_id, client_id)
    except Exception:  # values the old version cannot carry: its neutral request
        neutral: Any = protocol.make(protocol.schema(api_key, legacy.base).request_type)
        return encode_legacy_request(legacy, version, neutral, correlation_id, client_id)


def random_body(rng: random.Random, api_key: int, version: int) -> Any:
    """A request of ``api_key`` ``version`` that encodes: random values, or neutral ones when
    the random ones do not encode (a value out of a field's range, say)."""
    found = protocol.schema(api_key, version)
    if rng.random() < 0.15:
        return protocol.make(found.request_type)
    if api_key == ApiKey.PUSH_TELEMETRY and rng.random() < 0.6:
        return otlp_corpus.push_request(rng, found.request_type)  # past the checks, decoded
    body = _struct(rng, found.request_type, 0)
    try:
        protocol.encode_request(body)
    except Exception:
        return protocol.make(found.request_type)
    return body


def _struct(rng: random.Random, cls: type, depth: int) -> Any:
    values = {}
    for field in fields(cls):
        values[field.name] = _field(rng, field, depth)
    return cls(**values)


def _field(rng: random.Random, field: Field[Any], depth: int) -> Any:
    kind = classify_field(field)
    kafka_type = field.metadata.get("kafka_type", "")
    nullable = is_optional(field)
    if nullable and rng.random() < 0.2:
        return None
    if isinstance(kind, PrimitiveField):
        return _primitive(rng, str(kafka_type))
    if isinstance(kind, EntityField):
        return _struct(rng, kind.type_, depth + 1)
    count = rng.choice((0, 1, 1, 2, 3)) if depth < 3 else 0
    if isinstance(kind, EntityTupleField):
        return tuple(_struct(rng, kind.type_, depth + 1) for _ in range(count))
    if isinstance(kind, PrimitiveTupleField):
        return tuple(_primitive(rng, str(kafka_type)) for _ in range(count))
    raise TypeError(f"unknown field kind {kind!r}")  # pragma: no cover


def _pick(rng: random.Random, options: Sequence[Any]) -> Any:
    return options[rng.randrange(len(options))]


_KEYS = (None, b"k0", b"k1", b"k2")
_VALUES = (None, b"", b"v", b"value" * 20)


def _records(rng: random.Random) -> bytes:
    """A valid batch (CRC and all) of up to four records from a few keys, some null."""
    entries = [(_pick(rng, _KEYS), _pick(rng, _VALUES)) for _ in range(rng.randint(1, 4))]
    return build_batch(entries, _pick(rng, (0, 1_000, 2**40)))


def _primitive(rng: random.Random, kafka_type: str) -> Any:
    bounds = _INT_EDGES.get(kafka_type)
    if bounds is not None:
        low, high = bounds
        roll = rng.random()
        if roll < 0.7:
            return max(low, min(high, _pick(rng, _SMALL)))
        if roll < 0.85:
            return _pick(rng, bounds)
        return rng.randint(low, high)
    if kafka_type == "bool":
        return rng.random() < 0.5
    if kafka_type == "string":
        if rng.random() < 0.85:
            return _pick(rng, NAMES)
        return "".join(chr(rng.randint(32, 0x2FF)) for _ in range(rng.randint(0, 40)))
    if kafka_type == "records" and rng.random() < 0.5:
        return _records(rng)
    if kafka_type in ("bytes", "records"):
        return rng.randbytes(rng.choice((0, 1, 8, 61, 200)))
    if kafka_type == "uuid":
        return uuid.UUID(int=0) if rng.random() < 0.5 else uuid.UUID(int=rng.getrandbits(128))
    if kafka_type == "timedelta_i32":
        return datetime.timedelta(milliseconds=_pick(rng, (-1, 0, 1, 100, 30000, 2**31 - 1)))
    if kafka_type == "timedelta_i64":
        return datetime.timedelta(milliseconds=_pick(rng, (-1, 0, 1, 100, 30000, 2**40)))
    if kafka_type == "datetime_i64":
        return datetime.datetime.fromtimestamp(rng.randint(0, 2**31), datetime.UTC)
    raise TypeError(f"no values for kafka type {kafka_type!r}")  # pragma: no cover
