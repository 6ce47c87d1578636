"""``protocol.guard.check_lengths``: every frame kio writes passes, every length that cannot fit
is refused before kio's native reader sees it (kio reserves memory for a declared array length
up front, and an allocation failure aborts the process).

kio's reader only ever runs here on frames the guard accepted, and the mutation test runs in a
child process with a capped address space, so a missed huge length aborts the child and fails
the test instead of taking pytest down.
"""

from __future__ import annotations

import dataclasses
import io
import os
import resource
import signal
import struct
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st
from kio.schema.index import api_key_map, schema_name_map
from kio.serial import entity_reader, entity_writer
from kio.serial._introspect import EntityField, classify_field, is_optional
from kio.serial.errors import OutOfBoundValue

from coordinator.bench.codec import _heartbeat_messages, _join_group_messages
from protocol import make, parse_request_header, schema
from protocol.errors import MalformedFrame
from protocol.guard import body_end, check_lengths, walker_source
from protocol.header import RequestHeader, encode_request_header
from tests.protocol.kio_values import values_of

ROOT = Path(__file__).resolve().parents[2]

# Every request class kio knows: (api key, version).
CASES = [
    (key, version)
    for key in sorted(api_key_map)
    for version in sorted(schema_name_map[api_key_map[key]])
]



def _body(value: Any) -> bytes:
    """The body as kio's own writer writes it."""
    buf = io.BytesIO()
    entity_writer(type(value))(buf, value)
    return buf.getvalue()


def _frame(value: Any) -> tuple[bytes, int]:
    """A request frame (no size prefix) and the offset of its body."""
    found = schema(int(value.__api_key__), int(value.__version__))
    header = encode_request_header(
        RequestHeader(found.api_key, found.version, 7, "guard", found.request_header_version)
    )
    return header + _body(value), len(header)


def _neutral(cls: type) -> Any:
    """``make(cls)``, with the required struct fields it leaves None made too."""
    value: Any = make(cls)
    for field in dataclasses.fields(cls):
        kind = classify_field(field)
        if (
            isinstance(kind, EntityField)
            and not is_optional(field)
            and getattr(value, field.name) is None
        ):
            value = dataclasses.replace(value, **{field.name: _neutral(kind.type_)})
    return value


def _read(cls: type, frame: bytes, offset: int) -> tuple[Any, int]:
    """kio's native reader, which the codec runs: only ever on frames the guard accepted."""
    return entity_reader(cls)(frame, offset)


def _uvarint(value: int) -> bytes:
    out = bytearray()
    while value > 0x7F:
        out.append(value & 0x7F | 0x80)
        value >>= 7
    out.append(value)
    return bytes(out)


def _refused(cls: type, frame: bytes, offset: int = 0) -> None:
    with pytest.raises(MalformedFrame):
        check_lengths(cls, frame, offset)
    with pytest.raises(MalformedFrame):
        check_lengths(cls, memoryview(frame), offset)


# -- no false positives ----------------------------------------------------------------------


def test_covers_every_request_kio_knows() -> None:
    assert len(CASES) >= 300
    for key, version in CASES:
        walker_source(schema(key, version).request_type)  # compiles, refuses no field kind
        assert "cannot check" not in walker_source(schema(key, version).request_type)


@pytest.mark.parametrize(
    ("api_key", "version"), CASES, ids=[f"{api_key_map[k]}-v{v}" for k, v in CASES]
)
@settings(max_examples=3, deadline=None, suppress_health_check=list(HealthCheck), derandomize=True)
@given(data=st.data())
def test_accepts_what_kio_writes(api_key: int, version: int, data: st.DataObject) -> None:
    found = schema(api_key, version)
    value = data.draw(values_of(found.request_type))
    try:
        body = _body(value)
    except OutOfBoundValue:
        assume(False)
    # The walk ends exactly where kio's writer stopped, bytes or memoryview, at any offset.
    assert body_end(found.request_type, body, 0) == len(body)
    assert body_end(found.request_type, memoryview(body), 0) == len(body)
    padded = b"\xff" * 5 + body + b"trailing"
    assert body_end(found.request_type, padded, 5) == 5 + len(body)
    check_lengths(found.request_type, padded, 5)
    # kio reads exactly as far as the guard walked.
    try:
        assert _read(found.request_type, body, 0)[1] == len(body)
    except (ValueError, OverflowError) as exc:  # timedelta/datetime range, not lengths
        assert "overflow" in str(exc) or "range" in str(exc)
    # And any cut inside the body is caught.
    for cut in range(0, len(body), max(1, len(body) // 64)):
        _refused(found.request_type, body[:cut])


@pytest.mark.parametrize(
    ("api_key", "version"), CASES, ids=[f"{api_key_map[k]}-v{v}" for k, v in CASES]
)
def test_accepts_neutral_requests_in_whole_frames(api_key: int, version: int) -> None:
    found = schema(api_key, version)
    frame, offset = _frame(_neutral(found.request_type))
    assert body_end(found.request_type, frame, offset) == len(frame)
    # Every cut inside the body is caught (the walk reads no further than it must).
    for cut in range(offset, len(frame)):
        _refused(found.request_type, frame[:cut], offset)


@pytest.mark.parametrize("messages", [_heartbeat_messages, _join_group_messages])
def test_benchmark_messages_and_every_truncation(messages: Any) -> None:
    request, _ = messages()
    found = schema(int(request.__api_key__), int(request.__version__))
    frame, offset = _frame(request)
    assert body_end(found.request_type, frame, offset) == len(frame)
    assert _read(found.request_type, frame, offset)[1] == len(frame) - offset
    for cut in range(offset, len(frame)):
        _refused(found.request_type, frame[:cut], offset)


# -- the frames that abort kio -----------------------------------------------------------------

METADATA_V12 = bytes.fromhex("0003000c0000000100017400ffffffff0f")
METADATA_V1 = bytes.fromhex("00030001000000010001747fffffff")


def test_metadata_v12_compact_array_of_four_billion() -> None:
    found = schema(3, 12)
    _, offset = parse_request_header(METADATA_V12, found.request_header_version)
    assert offset == 12
    with pytest.raises(MalformedFrame, match="topics array length"):
        check_lengths(found.request_type, METADATA_V12, offset)


def test_metadata_v1_int32_array_length() -> None:
    found = schema(3, 1)
    _, offset = parse_request_header(METADATA_V1, found.request_header_version)
    with pytest.raises(MalformedFrame, match="topics array length"):
        check_lengths(found.request_type, METADATA_V1, offset)
    # One element short is refused too, an exact fit is accepted.
    names = b"\x00\x01a" * 3
    check_lengths(found.request_type, struct.pack(">i", 3) + names, 0)
    _refused(found.request_type, struct.pack(">i", 4) + names)
    _refused(found.request_type, struct.pack(">i", -2))
    check_lengths(found.request_type, struct.pack(">i", -1), 0)


@pytest.mark.parametrize(
    "length", [b"\xff\xff\xff\xff\x0f", b"\x80\x80\x80\x80\x08", _uvarint(2**31), _uvarint(40)]
)
def test_huge_compact_string(length: bytes) -> None:
    # JoinGroup v9 starts with group_id, a compact string.
    _refused(schema(11, 9).request_type, length + b"orders")


def test_varint_longer_than_five_bytes() -> None:
    with pytest.raises(MalformedFrame, match="varint"):
        check_lengths(schema(11, 9).request_type, b"\x81\x80\x80\x80\x80\x00" + b"\x00" * 64, 0)


def _join_group_v9(metadata_length: bytes, tags: bytes = b"\x00") -> bytes:
    return (
        b"\x07orders"
        + struct.pack(">ii", 45000, 300000)
        + b"\x01"
        + b"\x00"
        + b"\x09consumer"
        + b"\x02"
        + b"\x06range"
        + metadata_length
        + b"abc"
        + b"\x00"
        + b"\x01"
        + tags
    )


def test_join_group_protocol_metadata_lengths() -> None:
    cls = schema(11, 9).request_type
    assert body_end(cls, _join_group_v9(b"\x04"), 0) == len(_join_group_v9(b"\x04"))
    for length in (b"\x05", _uvarint(2**20), b"\xff\xff\xff\xff\x0f"):
        _refused(cls, _join_group_v9(length))


def test_join_group_v5_int32_bytes_length() -> None:
    cls = schema(11, 5).request_type
    head = (
        b"\x00\x06orders"
        + struct.pack(">ii", 45000, 300000)
        + b"\x00\x00"
        + b"\xff\xff"
        + b"\x00\x08consumer"
        + struct.pack(">i", 1)
        + b"\x00\x05range"
    )
    check_lengths(cls, head + struct.pack(">i", 3) + b"abc", 0)
    for length in (4, 2**31 - 1):
        _refused(cls, head + struct.pack(">i", length) + b"abc")
    _refused(cls, head + struct.pack(">i", -2) + b"abc")
    _refused(cls, head[:-11] + struct.pack(">i", 2**31 - 1) + head[-7:] + b"\x00\x00\x00\x00")


def test_tagged_fields() -> None:
    cls = schema(11, 9).request_type
    # An unknown tag is skipped by its size (kio itself then refuses it, harmlessly).
    assert body_end(cls, _join_group_v9(b"\x04", b"\x01\x05\x02hi"), 0) > 0
    for tags in (
        b"\x01\x05" + _uvarint(2**32),
        b"\x01\x05\x03hi",
        _uvarint(2**31) + b"\x05\x00",
        b"\x03\x05\x00\x06\x00",
    ):
        _refused(cls, _join_group_v9(b"\x04", tags))
    # A known tag must take the size it declares, and its content is walked like any field.
    fetch = schema(1, 12).request_type
    frame, offset = _frame(make(fetch, cluster_id="c1"))
    assert frame[-6:] == b"\x01\x00\x03\x03c1"
    assert body_end(fetch, frame, offset) == len(frame)
    _refused(fetch, frame[:-4] + b"\x04\x03c1x", offset)
    _refused(fetch, frame[:-4] + b"\x02\x03c1", offset)
    _refused(fetch, frame[:-4] + b"\x08" + _uvarint(2**32) + b"c1x", offset)
    heartbeat = schema(63, 1).request_type
    frame, offset = _frame(make(heartbeat))
    assert frame[-1:] == b"\x00"
    huge_uuid_array = b"\x01\x00\x05" + b"\xff\xff\xff\xff\x0f"
    _refused(heartbeat, frame[:-1] + huge_uuid_array, offset)


def test_nullable_struct_marker() -> None:
    found = schema(75, 0)  # DescribeTopicPartitions: cursor is a nullable struct (KIP-893)
    cls = found.request_type
    cursor_cls = sys.modules[cls.__module__].Cursor
    for cursor in (None, cursor_cls(topic_name="orders", partition_index=3)):
        frame, offset = _frame(make(cls, cursor=cursor, response_partition_limit=10))
        assert body_end(cls, frame, offset) == len(frame)
    null = b"\x01" + struct.pack(">i", 10) + b"\xff" + b"\x00"
    assert body_end(cls, null, 0) == len(null)
    present = b"\x01" + struct.pack(">i", 10) + b"\x01" + b"\x07orders" + struct.pack(">i", 3)
    assert body_end(cls, present + b"\x00\x00", 0) == len(present) + 2
    _refused(cls, present + b"\x00")
    huge_name = b"\x01" + struct.pack(">i", 10) + b"\x01" + b"\xff\xff\xff\xff\x0f" + b"\x00" * 8
    _refused(cls, huge_name)


# -- mutations, with kio reading whatever the guard accepts -------------------------------------

_PATTERNS = [
    b"\xff\xff\xff\xff\x0f",
    b"\x7f\xff\xff\xff",
    b"\x8f\xff\xff\xff\x07",
    b"\xff\xff\xff\xff\xff",
    b"\x00\x00\xff\xff",
    b"\xff",
    b"\x80",
    b"\x00",
    b"\x7f\xff",
    b"\x01\x00\x00\x00\x00",
]


def _kio_agrees(found: Any, frame: bytes, checked_end: int) -> None:
    try:
        _, size = _read(found.request_type, frame, 0)
    except Exception:
        return  # kio refused it some other way: fine, that is a MalformedFrame for the codec
    assert size == checked_end, "kio read a different body than the guard walked"


def _try(found: Any, frame: bytes) -> bool:
    """Guard, then (only if it passed) kio. True when the guard refused."""
    try:
        end = body_end(found.request_type, frame, 0)
    except MalformedFrame:
        return True
    _kio_agrees(found, frame, end)
    return False


# what _mutated draws from, built once (a strategy built afresh in a draw is validated again)
_CASE = st.sampled_from(CASES)
_HOW_MANY = st.integers(1, 3)
_HOW = st.sampled_from(["truncate", "set", "pattern", "insert", "length"])
_BYTE = st.integers(0, 255)
_PATTERN = st.sampled_from(_PATTERNS)
_INSERTED = st.binary(min_size=1, max_size=6)
_BIG = st.integers(2**16, 2**35 - 1)


@st.composite
def _mutated(draw: st.DrawFn) -> tuple[Any, bytes]:
    key, version = draw(_CASE)
    found = schema(key, version)
    value = draw(values_of(found.request_type))
    try:
        data = bytearray(_body(value))
    except OutOfBoundValue:
        assume(False)
    for _ in range(draw(_HOW_MANY)):
        at = draw(st.integers(0, len(data)))
        match draw(_HOW):
            case "truncate":
                del data[at:]
            case "set":
                data[at : at + 1] = bytes([draw(_BYTE)])
            case "pattern":
                pattern = draw(_PATTERN)
                data[at : at + len(pattern)] = pattern
            case "insert":
                data[at:at] = draw(_INSERTED)
            case "length":
                big = draw(_BIG)
                encoded = draw(st.sampled_from([_uvarint(big), struct.pack(">I", big % 2**32)]))
                data[at : at + len(encoded)] = encoded
    return found, bytes(data)


@settings(
    max_examples=1500,
    deadline=None,
    suppress_health_check=list(HealthCheck),
    derandomize=True,
    database=None,
)
@given(case=_mutated())
def _mutations(case: tuple[Any, bytes]) -> None:
    found, frame = case
    _try(found, frame)


def _sweep() -> int:
    """Every large length pattern at every position of a few real frames."""
    refused = 0
    frames = [m()[0] for m in (_heartbeat_messages, _join_group_messages)]
    frames += [_neutral(schema(k, v).request_type) for k, v in CASES]
    for value in frames:
        found = schema(int(value.__api_key__), int(value.__version__))
        body = _body(value)
        for at in range(len(body) + 1):
            for pattern in _PATTERNS:
                refused += _try(found, body[:at] + pattern + body[at + len(pattern) :])
            refused += _try(found, body[:at])
    return refused


def _cap_address_space(extra: int = 1 << 30) -> None:
    """Cap this process at its current size plus ``extra``: a huge allocation then fails."""
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    with open("/proc/self/status") as status:
        size = next(int(line.split()[1]) * 1024 for line in status if line.startswith("VmSize"))
    resource.setrlimit(resource.RLIMIT_AS, (size + extra, resource.RLIM_INFINITY))


def _mutation_child() -> None:
    _cap_address_space()
    print("sweep refused", _sweep())
    _mutations()
    print("mutations ok")


def _abort_child() -> None:
    """Control: kio unguarded on the crash frame, capped, must abort (proves the cap works)."""
    _cap_address_space()
    _read(schema(3, 12).request_type, METADATA_V12, 12)


def _run_child(function: str) -> subprocess.CompletedProcess[str]:
    code = f"from tests.protocol.test_guard import {function}; {function}()"
    env = {**os.environ, "PYTHONPATH": str(ROOT)}
    return subprocess.run(
        [sys.executable, "-c", code],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=240,
        check=False,
    )


needs_linux = pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="needs /proc")


@needs_linux
def test_capped_child_turns_an_abort_into_a_failure() -> None:
    result = _run_child("_abort_child")
    assert result.returncode == -signal.SIGABRT, (result.returncode, result.stderr[-2000:])
    assert "memory allocation" in result.stderr


@pytest.mark.slow
@needs_linux
def test_mutated_frames_are_refused_or_read_safely() -> None:
    result = _run_child("_mutation_child")
    assert result.returncode == 0, (result.returncode, result.stdout, result.stderr[-4000:])
    assert "mutations ok" in result.stdout
