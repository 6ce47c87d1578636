"""Our codec (kio) against an independent implementation (kafka-python 3), byte for byte.

For every (api, version) both know, random messages are encoded by ours, decoded and re-encoded
by kafka-python, and must come back as the same bytes; then decoded by ours to the same value.
"""

from __future__ import annotations

import dataclasses
import io
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from kio.schema.errors import ErrorCode
from kio.schema.index import api_key_map

from protocol import (
    decode_request,
    encode_request,
    known_versions,
    make,
    parse_request_header,
    schema,
)
from protocol.reference import kafka_python_classes, kafka_python_versions
from tests.protocol.kio_values import values_of


def _cases() -> list[tuple[int, int, bool]]:
    cases = []
    for api_key in sorted(api_key_map):
        for request in (True, False):
            if (api_key, request) not in kafka_python_classes():
                continue
            ours = known_versions(api_key)
            theirs = kafka_python_versions(api_key, request)
            for version in sorted(set(ours) & set(theirs)):
                cases.append((api_key, version, request))
    return cases


CASES = _cases()



def test_the_cross_check_covers_the_apis_we_serve() -> None:
    covered = {(key, version) for key, version, _ in CASES}
    for key, low, high in [(18, 0, 4), (3, 0, 13), (10, 0, 6), (19, 2, 7), (20, 1, 6),
                           (37, 0, 3), (60, 0, 2), (32, 1, 4), (11, 0, 9), (12, 0, 4),
                           (14, 0, 5), (13, 0, 5)]:
        for version in range(low, high + 1):
            assert (key, version) in covered, (key, version)
    assert len(CASES) > 400


def _encode_ours(api_key: int, version: int, request: bool, value: Any) -> bytes:
    found = schema(api_key, version)
    buf = io.BytesIO()
    (found.write_request if request else found.write_response)(buf, value)
    return buf.getvalue()


def _decode_ours(api_key: int, version: int, request: bool, data: bytes) -> Any:
    found = schema(api_key, version)
    value, size = (found.read_request if request else found.read_response)(data, 0)
    assert size == len(data)
    return value


@pytest.mark.parametrize(("api_key", "version", "request_side"), CASES,
                         ids=[f"{api_key_map[k]}-v{v}-{'req' if r else 'resp'}"
                              for k, v, r in CASES])
@settings(max_examples=4, deadline=None, suppress_health_check=list(HealthCheck),
          derandomize=True)
@given(data=st.data())
def test_same_bytes_as_kafka_python(api_key: int, version: int, request_side: bool,
                                    data: st.DataObject) -> None:
    found = schema(api_key, version)
    kind = found.request_type if request_side else found.response_type
    value = data.draw(values_of(kind))
    if api_key == 18 and not request_side:
        # By protocol, a client reads an ApiVersions response carrying an error as v0.
        value = dataclasses.replace(value, error_code=ErrorCode.none)
    ours = _encode_ours(api_key, version, request_side, value)
    try:
        ours_decoded = _decode_ours(api_key, version, request_side, ours)
    except ValueError as exc:
        # kio decodes int32/int64 durations to timedelta, which holds at most 999,999,999 days.
        assert "overflow" in str(exc)
        assume(False)
    assert ours_decoded == value
    theirs_cls = kafka_python_classes()[(api_key, request_side)]
    decoded = theirs_cls.decode(ours, version=version)
    object.__setattr__(decoded, "_header", None)  # decoded messages lack it; encode() wants it
    assert decoded.encode() == ours


@pytest.mark.parametrize(("api_key", "version"), [(3, 0), (3, 8), (3, 9), (3, 13), (18, 0),
                                                  (18, 3), (10, 4), (19, 7)])
@pytest.mark.parametrize("client_id", ["kafka-python", None, "", "ünïcode"])
def test_request_header_and_frame_match_kafka_python(api_key: int, version: int,
                                                     client_id: str | None) -> None:
    found = schema(api_key, version)
    ours = encode_request(make(found.request_type), correlation_id=4242, client_id=client_id)
    theirs_cls = kafka_python_classes()[(api_key, True)]
    decoded = theirs_cls.decode(ours[4 + _header_size(ours[4:], found.request_header_version):],
                                version=version)
    message = theirs_cls[version](**{k: getattr(decoded, k) for k in decoded.fields})
    message.with_header(correlation_id=4242, client_id=client_id)
    assert message.encode(header=True, framed=True) == ours
    request = decode_request(ours[4:])
    assert request.header.correlation_id == 4242
    assert request.header.client_id == client_id


def _header_size(frame: bytes, header_version: int) -> int:
    return parse_request_header(frame, header_version)[1]
