"""``python -m coordinator bench codec``: µs per decode and per encode of the hottest messages,
ours (kio) against kafka-python 3's classes as the baseline."""

from __future__ import annotations

import argparse
import datetime
import io
import json
import sys
import time
import uuid
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from protocol import Schema, decode_request, encode_request, encode_response, make, schema
from storage.machine import with_machine

if TYPE_CHECKING:  # kafka-python is imported when the bench runs, not with the CLI
    from kafka.protocol.api_message import ApiMessage

_MS = datetime.timedelta


def _heartbeat_messages() -> tuple[Any, Any]:
    found = schema(68, 1)
    req_mod = sys.modules[found.request_type.__module__]
    resp_mod = sys.modules[found.response_type.__module__]
    topics = tuple(uuid.UUID(int=i + 1) for i in range(10))
    request: Any = make(
        found.request_type, group_id="orders-consumers",
        member_id="Q8kZ3o0tRx2bA7fP1cYw9g", member_epoch=17, instance_id=None,
        rack_id="rack-a", rebalance_timeout=_MS(milliseconds=300000),
        subscribed_topic_names=None, subscribed_topic_regex=None,
        server_assignor=None,
        topic_partitions=tuple(req_mod.TopicPartitions(topic_id=t, partitions=(0, 1, 2))
                               for t in topics))
    response: Any = make(
        found.response_type, throttle_time=_MS(0), error_message=None,
        member_id="Q8kZ3o0tRx2bA7fP1cYw9g", member_epoch=18,
        heartbeat_interval=_MS(milliseconds=5000),
        assignment=resp_mod.Assignment(topic_partitions=tuple(
            resp_mod.TopicPartitions(topic_id=t, partitions=(0, 1, 2))
            for t in topics)))
    return request, response


def _join_group_messages() -> tuple[Any, Any]:
    found = schema(11, 9)
    req_mod = sys.modules[found.request_type.__module__]
    resp_mod = sys.modules[found.response_type.__module__]
    metadata = bytes(range(256)) * 2
    request: Any = make(
        found.request_type, group_id="orders-consumers",
        session_timeout=_MS(milliseconds=45000),
        rebalance_timeout=_MS(milliseconds=300000),
        member_id="consumer-1-4f1f0d0e-6c6a-4d1e-9c8f-2b2c1a3e4f50",
        group_instance_id=None, protocol_type="consumer",
        protocols=(req_mod.JoinGroupRequestProtocol(name="cooperative-sticky",
                                                    metadata=metadata),
                   req_mod.JoinGroupRequestProtocol(name="range", metadata=metadata)),
        reason="rebalance failed due to UnknownMemberIdException")
    members = tuple(resp_mod.JoinGroupResponseMember(member_id=f"consumer-{i}",
                                                      group_instance_id=None, metadata=metadata)
                    for i in range(10))
    response: Any = make(
        found.response_type, throttle_time=_MS(0), generation_id=12,
        protocol_type="consumer", protocol_name="cooperative-sticky",
        leader="consumer-0", skip_assignment=False, member_id="consumer-0",
        members=members)
    return request, response


def _time_us(fn: Callable[[], object], iterations: int) -> float:
    for _ in range(min(1000, iterations)):
        fn()
    best = float("inf")
    for _ in range(5):
        start = time.perf_counter()
        for _ in range(iterations):
            fn()
        best = min(best, (time.perf_counter() - start) / iterations)
    return best * 1e6


def _kafka_python_pair(api_key: int, request: bool) -> type[ApiMessage] | None:
    from protocol.reference import kafka_python_classes

    return kafka_python_classes().get((api_key, request))


def _row(label: str, frame: bytes, decode: Callable[[], object], encode: Callable[[], object],
         theirs: type[ApiMessage] | None, body: bytes, version: int,
         iterations: int) -> dict[str, Any]:
    row: dict[str, Any] = {
        "message": label,
        "bytes": len(frame),
        "decode_us": round(_time_us(decode, iterations), 2),
        "encode_us": round(_time_us(encode, iterations), 2),
    }
    if theirs is not None:
        decoded = theirs.decode(body, version=version)
        object.__setattr__(decoded, "_header", None)  # decoded messages lack it; encode wants it
        row["kafka_python_decode_us"] = round(
            _time_us(lambda: theirs.decode(body, version=version), iterations), 2)
        row["kafka_python_encode_us"] = round(_time_us(decoded.encode, iterations), 2)
    return row


def measure(iterations: int) -> list[dict[str, Any]]:
    rows = []
    for name, api_key, version, (request, response) in [
        ("ConsumerGroupHeartbeat", 68, 1, _heartbeat_messages()),
        ("JoinGroup", 11, 9, _join_group_messages()),
    ]:
        found = schema(api_key, version)
        request_frame = encode_request(request, correlation_id=7)
        request_body = _body_bytes(found, request, True)

        # defs, not lambdas: mypy cannot infer a lambda with a default argument
        def decode_req(f: bytes = request_frame) -> object:
            return decode_request(memoryview(f)[4:])

        def encode_req(m: Any = request) -> object:
            return encode_request(m, correlation_id=7)

        rows.append(_row(
            f"{name} v{version} request", request_frame, decode_req, encode_req,
            _kafka_python_pair(api_key, True), request_body, version, iterations))
        response_frame = encode_response(found, 7, response)
        header_size = 4 + (5 if found.response_header_version else 4)

        def decode_resp(f: bytes = response_frame, h: int = header_size,
                        s: Schema = found) -> object:
            return s.read_response(f, h)

        def encode_resp(m: Any = response, s: Schema = found) -> object:
            return encode_response(s, 7, m)

        rows.append(_row(
            f"{name} v{version} response", response_frame, decode_resp, encode_resp,
            _kafka_python_pair(api_key, False), response_frame[header_size:], version,
            iterations))
    return rows


def _body_bytes(found: Any, message: Any, request: bool) -> bytes:
    buf = io.BytesIO()
    (found.write_request if request else found.write_response)(buf, message)
    return buf.getvalue()


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--iterations", type=int, default=20000)


def run(args: argparse.Namespace) -> int:
    rows = measure(args.iterations)
    header = f"{'message':<36}{'bytes':>7}{'decode µs':>11}{'encode µs':>11}" \
             f"{'k-p decode':>12}{'k-p encode':>12}"
    print(header)
    for row in rows:
        print(f"{row['message']:<36}{row['bytes']:>7}{row['decode_us']:>11.2f}"
              f"{row['encode_us']:>11.2f}{row.get('kafka_python_decode_us', float('nan')):>12.2f}"
              f"{row.get('kafka_python_encode_us', float('nan')):>12.2f}")
    print(json.dumps([with_machine(row) for row in rows]))
    return 0
