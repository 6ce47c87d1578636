"""The compiled encoder against kio's writer, byte for byte, for every message class kio knows."""

from __future__ import annotations

import datetime
import io
import sys
import uuid
from pkgutil import resolve_name
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from kio.schema.errors import ErrorCode
from kio.schema.index import schema_name_map
from kio.serial import entity_writer
from kio.serial.errors import OutOfBoundValue
from kio.static.constants import EntityType

from protocol import fastwrite, make, schema
from protocol.fastwrite import compile_writer, encode, is_compiled, stream_writer
from tests.protocol.kio_values import values_of

_MS = datetime.timedelta


def _paths() -> list[tuple[str, str]]:
    """(label, dotted path) of every class: collecting them imports none of kio's schema
    modules (every xdist worker collects this module; only the one running a test needs it)."""
    found = []
    for name, versions in sorted(schema_name_map.items()):
        for version, paths in sorted(versions.items()):
            for kind, path in sorted(paths.items(), key=lambda item: item[0].value):
                found.append((f"{name}-v{version}-{kind.name}", path))
    return found


PATHS = _paths()


def _kio(value: Any) -> bytes:
    buf = io.BytesIO()
    entity_writer(type(value))(buf, value)
    return buf.getvalue()


def _ours(value: Any) -> bytes:
    buf = bytearray(b"prefix")
    compile_writer(type(value))(buf, value)  # type: ignore[arg-type]  # classes hash: mypy#11470
    assert buf[:6] == b"prefix"  # appends, never rewrites
    return bytes(buf[6:])


@pytest.mark.slow
def test_every_class_is_covered_and_compiled() -> None:
    # Every request and response of every API and version, plus headers and data schemas.
    assert len(PATHS) > 620
    fallbacks = [label for label, path in PATHS if not is_compiled(resolve_name(path))]
    assert fallbacks == []


def _check_same_bytes(cls: type, examples: int) -> None:
    @settings(
        max_examples=examples,
        deadline=None,
        database=None,
        suppress_health_check=[
            HealthCheck.too_slow,
            HealthCheck.data_too_large,
            HealthCheck.filter_too_much,
        ],
    )
    @given(values_of(cls))
    def check(value: Any) -> None:
        assert _ours(value) == _kio(value)

    check()


@pytest.mark.parametrize(("label", "path"), PATHS, ids=[label for label, _ in PATHS])
def test_same_bytes_as_kio(label: str, path: str) -> None:
    _check_same_bytes(resolve_name(path), examples=4)


# The group coordinator's own APIs, at the versions clients use most, get more examples.
_SERVED = [(68, 0), (68, 1), (11, 9), (14, 5), (12, 4), (13, 5), (8, 9), (9, 9), (8, 10), (9, 10),
           (10, 6), (18, 3)]


@pytest.mark.parametrize(("api_key", "version"), _SERVED)
def test_same_bytes_as_kio_for_the_apis_we_serve(api_key: int, version: int) -> None:
    found = schema(api_key, version)
    _check_same_bytes(found.request_type, examples=25)
    _check_same_bytes(found.response_type, examples=25)


def _module(api_key: int, version: int, kind: EntityType) -> Any:
    found = schema(api_key, version)
    cls = found.request_type if kind is EntityType.request else found.response_type
    return sys.modules[cls.__module__]


def test_consumer_group_heartbeat_v1_response_by_hand() -> None:
    mod = _module(68, 1, EntityType.response)
    value = mod.ConsumerGroupHeartbeatResponse(
        throttle_time=_MS(0),
        error_code=ErrorCode.none,
        error_message=None,
        member_id="m",
        member_epoch=18,
        heartbeat_interval=_MS(milliseconds=5000),
        assignment=mod.Assignment(
            topic_partitions=(mod.TopicPartitions(topic_id=uuid.UUID(int=1), partitions=(0, 1)),)
        ),
    )
    expected = (
        b"\x00\x00\x00\x00"  # throttle_time_ms
        b"\x00\x00"  # error_code
        b"\x00"  # error_message: null
        b"\x02m"  # member_id
        b"\x00\x00\x00\x12"  # member_epoch
        b"\x00\x00\x13\x88"  # heartbeat_interval_ms
        b"\x01"  # assignment present (nullable struct)
        b"\x02"  # one topic
        + uuid.UUID(int=1).bytes
        + b"\x03\x00\x00\x00\x00\x00\x00\x00\x01"  # partitions [0, 1]
        b"\x00"  # topic's tagged fields
        b"\x00"  # assignment's tagged fields
        b"\x00"  # response's tagged fields
    )
    assert _kio(value) == expected
    assert _ours(value) == expected
    assert encode(value) == expected

    no_assignment = mod.ConsumerGroupHeartbeatResponse(
        throttle_time=_MS(0),
        error_code=ErrorCode.unknown_member_id,
        error_message="gone",
        member_id=None,
        member_epoch=-1,
        heartbeat_interval=_MS(0),
        assignment=None,
    )
    assert _ours(no_assignment) == _kio(no_assignment)
    assert _ours(no_assignment)[-2:] == b"\xff\x00"


def test_join_group_v9_response_by_hand() -> None:
    mod = _module(11, 9, EntityType.response)
    metadata = bytes(range(256)) * 2  # a two-byte varint length
    members = tuple(
        mod.JoinGroupResponseMember(
            member_id=f"consumer-{i}",
            group_instance_id=None if i % 2 else f"instance-{i}",
            metadata=metadata,
        )
        for i in range(10)
    )
    value = mod.JoinGroupResponse(
        throttle_time=_MS(milliseconds=7),
        error_code=ErrorCode.none,
        generation_id=12,
        protocol_type="consumer",
        protocol_name=None,
        leader="consumer-0",
        skip_assignment=True,
        member_id="consumer-0",
        members=members,
    )
    ours = _ours(value)
    assert ours == _kio(value)
    assert ours.startswith(b"\x00\x00\x00\x07\x00\x00\x00\x00\x00\x0c\x09consumer\x00")
    assert ours.count(b"\x81\x04" + metadata) == 10  # 513 = 0x81 0x04 as a varint


def test_join_group_v9_request_and_a_legacy_version() -> None:
    for version in (9, 5, 0):
        mod = _module(11, version, EntityType.request)
        cls = mod.JoinGroupRequest
        value = make(
            cls,
            group_id="g",
            session_timeout=_MS(milliseconds=45000),
            rebalance_timeout=_MS(milliseconds=300000),
            member_id="",
            group_instance_id=None,
            protocol_type="consumer",
            protocols=(mod.JoinGroupRequestProtocol(name="range", metadata=b"\x00\x01"),),
            reason="because",
        )
        assert _ours(value) == _kio(value), version


def test_tagged_fields_written_only_when_not_default_in_tag_order() -> None:
    mod = _module(18, 3, EntityType.response)
    plain = mod.ApiVersionsResponse(error_code=ErrorCode.none, api_keys=(), throttle_time=_MS(0))
    assert _ours(plain) == _kio(plain)
    assert _ours(plain).endswith(b"\x00")
    tagged = mod.ApiVersionsResponse(
        error_code=ErrorCode.none,
        api_keys=(mod.ApiVersion(api_key=18, min_version=0, max_version=3),),
        throttle_time=_MS(0),
        finalized_features_epoch=5,
        zk_migration_ready=True,
        supported_features=(
            mod.SupportedFeatureKey(name="metadata.version", min_version=1, max_version=20),
        ),
    )
    ours = _ours(tagged)
    assert ours == _kio(tagged)
    # Three tagged fields: 0 (supported_features), 1 (epoch), 3 (zk_migration_ready).
    assert ours.endswith(b"\x01\x08\x00\x00\x00\x00\x00\x00\x00\x05\x03\x01\x01")
    assert b"\x03\x00" in ours  # count 3, then tag 0 first


def test_long_arrays_and_long_strings() -> None:
    mod = _module(68, 1, EntityType.request)
    cls = mod.ConsumerGroupHeartbeatRequest
    value = make(
        cls,
        group_id="g" * 20000,  # a three-byte varint length
        member_id="é" * 100,  # multi-byte characters: length counts bytes
        member_epoch=1,
        rebalance_timeout=_MS(milliseconds=1),
        topic_partitions=tuple(
            mod.TopicPartitions(topic_id=uuid.UUID(int=i), partitions=tuple(range(200)))
            for i in range(3)
        ),
        subscribed_topic_names=tuple(f"t{i}" for i in range(300)),
    )
    assert _ours(value) == _kio(value)

    legacy = _module(11, 0, EntityType.request).JoinGroupRequest
    too_long = make(legacy, group_id="g" * 40000, protocol_type="consumer")
    with pytest.raises(OutOfBoundValue):
        _kio(too_long)
    with pytest.raises(OutOfBoundValue):
        _ours(too_long)


def test_none_for_a_non_nullable_string_is_refused() -> None:
    mod = _module(68, 1, EntityType.request)
    value = make(mod.ConsumerGroupHeartbeatRequest, group_id=None)
    with pytest.raises(TypeError):
        _kio(value)
    with pytest.raises(TypeError):
        _ours(value)


def test_unsupported_kinds_fall_back_to_kio(monkeypatch: pytest.MonkeyPatch) -> None:
    mod = _module(40, 1, EntityType.response)  # ExpireDelegationToken v1: a datetime_i64
    cls = mod.ExpireDelegationTokenResponse
    monkeypatch.delitem(fastwrite._FIXED, "datetime_i64")
    write = compile_writer.__wrapped__(cls)
    assert getattr(write, "__fastwrite_fallback__", False)
    value = cls(
        error_code=ErrorCode.none,
        expiry_timestamp=datetime.datetime(2024, 5, 1, 12, 0, tzinfo=datetime.UTC),
        throttle_time=_MS(milliseconds=3),
    )
    buf = bytearray(b"x")
    write(buf, value)
    assert bytes(buf) == b"x" + _kio(value)


def test_stream_writer_is_a_drop_in_for_kio() -> None:
    mod = _module(12, 4, EntityType.response)
    value = mod.HeartbeatResponse(throttle_time=_MS(0), error_code=ErrorCode.rebalance_in_progress)
    stream = io.BytesIO()
    stream.write(b"head")
    stream_writer(type(value))(stream, value)
    assert stream.getvalue() == b"head" + _kio(value)
    assert "def write(buf, value):" in fastwrite.source_of(mod.HeartbeatResponse)
