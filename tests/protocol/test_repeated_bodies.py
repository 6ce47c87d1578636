"""Steady heartbeats' bodies decoded once (``protocol.repeated``) and answers kept encoded
(``protocol.encoded``) give exactly what decoding and encoding anew give."""

from __future__ import annotations

import datetime
import importlib
import uuid
from typing import Any

import pytest

from protocol import MalformedFrame, decode_request, encode_request, encode_response, make, schema
from protocol.encoded import EncodedBody, encode_body, frame_encoded
from protocol.repeated import decode_repeated


def _cls(api: str, version: int, kind: str, name: str) -> Any:
    return getattr(importlib.import_module(f"kio.schema.{api}.v{version}.{kind}"), name)


def _steady(member_id: str, epoch: int) -> Any:
    return make(_cls("consumer_group_heartbeat", 1, "request", "ConsumerGroupHeartbeatRequest"),
                group_id="g", member_id=member_id, member_epoch=epoch, instance_id=None,
                rack_id=None, rebalance_timeout=datetime.timedelta(milliseconds=-1),
                subscribed_topic_names=None, subscribed_topic_regex=None, server_assignor=None,
                topic_partitions=None)


def test_a_repeated_body_is_decoded_once_and_equals_a_fresh_decode() -> None:
    member = str(uuid.uuid4())
    first = decode_repeated(encode_request(_steady(member, 3), 1, "a")[4:])
    again = decode_repeated(encode_request(_steady(member, 3), 2, "b")[4:])
    assert again.body is first.body  # kept
    assert again.header.correlation_id == 2 and again.header.client_id == "b"
    fresh = decode_request(encode_request(_steady(member, 3), 2, "b")[4:])
    assert again.body == fresh.body and again.header == fresh.header
    other = decode_repeated(encode_request(_steady(member, 4), 3, "b")[4:])
    assert other.body.member_epoch == 4  # other bytes, another body


def test_a_malformed_body_is_refused_every_time() -> None:
    frame = encode_request(_steady(str(uuid.uuid4()), 3), 1, "a")[4:]
    broken = frame[:-6]
    for _ in range(2):
        with pytest.raises(MalformedFrame):
            decode_repeated(broken)


def test_an_encoded_body_frames_as_encode_response_does() -> None:
    found = schema(68, 1)
    body: Any = make(found.response_type, throttle_time=datetime.timedelta(0), error_code=0,
                error_message=None, member_id="m", member_epoch=7,
                heartbeat_interval=datetime.timedelta(milliseconds=5000), assignment=None)
    encoded = encode_body(found, body)
    assert isinstance(encoded, EncodedBody)
    assert frame_encoded(found, 42, encoded) == encode_response(found, 42, body)
