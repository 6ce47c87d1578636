"""Unknown tagged fields are skipped, as Kafka's readers skip them (``protocol/tagged.py``)."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest

import protocol
from coordinator.apis import build_registry
from protocol import MalformedFrame, decode_request, encode_request, make, schema
from protocol.header import uvarint
from protocol.tagged import without_unknown_tags


def _unknown(tag: int, payload: bytes) -> bytes:
    return uvarint(tag) + uvarint(len(payload)) + payload


def _flexible_served() -> list[tuple[int, int]]:
    return [(int(spec.key), version) for spec in build_registry().specs()
            for version in range(spec.min_version, spec.max_version + 1)
            if schema(int(spec.key), version).flexible]


@pytest.mark.parametrize(("api_key", "version"), _flexible_served())
def test_an_unknown_top_level_tag_is_skipped_in_every_served_flexible_request(
        api_key: int, version: int) -> None:
    found = schema(api_key, version)
    body: Any = make(found.request_type)
    frame = encode_request(body, 9, "tags")[4:]
    assert frame[-1:] == b"\x00"  # neutral values write no tagged field
    offset = len(frame) - len(_body(found, frame))
    with pytest.raises(KeyError, match="Unknown tagged field"):  # what kio alone does with it
        found.read_request(frame[:-1] + b"\x01" + _unknown(9999, b"x"), offset)
    tagged = frame[:-1] + b"\x02" + _unknown(5000, b"") + _unknown(2**20, b"\xff" * 300)
    decoded = decode_request(tagged)
    assert decoded.body == body
    assert decoded.header.correlation_id == 9


def _fetch_v12(cluster_id: str | None, extra_tags: bytes, extra_count: int) -> bytes:
    """Fetch v12 with its known tag ``cluster_id`` (0) and unknown tags at the top level."""
    found = schema(1, 12)
    frame = encode_request(make(found.request_type, cluster_id=cluster_id), 3)[4:]
    assert frame.endswith(b"\x01\x00\x03\x03c1")
    return frame[:-6] + bytes([1 + extra_count]) + extra_tags + b"\x00\x03\x03c1"


def test_known_tags_are_kept_next_to_unknown_ones() -> None:
    frame = _fetch_v12("c1", _unknown(1, b"\x00\x00") + _unknown(77, b"abc"), 2)
    assert decode_request(frame).body.cluster_id == "c1"


def test_unknown_tags_inside_array_elements_are_skipped() -> None:
    found = schema(11, 9)  # JoinGroup v9: each protocol has a tag section of its own
    join: Any = found.request_type
    protocol_cls = join.__dataclass_fields__["protocols"].type.__args__[0]
    body: Any = make(join, group_id="g", session_timeout=timedelta(seconds=6), member_id="",
                     protocol_type="consumer",
                     protocols=(make(protocol_cls, name="range", metadata=b"m1"),
                                make(protocol_cls, name="rr", metadata=b"m2")))
    frame = encode_request(body, 5)[4:]
    # each element ends with its metadata then an empty tag section
    first = frame.index(b"m1") + 2
    second = frame.index(b"m2") + 2
    assert frame[first] == 0 and frame[second] == 0
    tagged = (frame[:first] + b"\x01" + _unknown(42, b"zz") + frame[first + 1:second]
              + b"\x02" + _unknown(1, b"") + _unknown(400, b"q") + frame[second + 1:])
    assert decode_request(tagged).body == body


def test_bodies_without_unknown_tags_are_left_to_the_reader() -> None:
    found = schema(1, 12)
    frame = encode_request(make(found.request_type, cluster_id="c1"), 3)[4:]
    header_end = len(frame) - len(_body(found, frame))
    assert without_unknown_tags(found.request_type, frame, header_end) is None
    # a wrong size for a known tag stays malformed
    with pytest.raises(MalformedFrame):
        decode_request(frame[:-4] + b"\x04\x03c1x")


def _body(found: Any, frame: bytes) -> bytes:
    _, offset = protocol.parse_request_header(frame, found.request_header_version)
    return frame[offset:]
