"""The v0 share APIs (Kafka 4.0's early access), derived from kio's v1 classes: their fields
are Kafka 4.0's, their bytes are what Kafka 4.0's schemas say, and the fuzz soak's corpus has
them."""

from __future__ import annotations

import dataclasses
import datetime
import random
import struct
import sys
import uuid

import pytest

import protocol
from coordinator.soak.corpus import random_body, served
from protocol import ApiKey

SHARE_APIS = (ApiKey.SHARE_GROUP_HEARTBEAT, ApiKey.SHARE_GROUP_DESCRIBE, ApiKey.SHARE_FETCH,
              ApiKey.SHARE_ACKNOWLEDGE)


def _names(cls: type) -> list[str]:
    return [f.name for f in dataclasses.fields(cls)]


def test_share_fetch_v0_has_kafka_4_0s_fields() -> None:
    v0 = protocol.schema(ApiKey.SHARE_FETCH, 0)
    request = sys.modules[v0.request_type.__module__]
    assert _names(v0.request_type) == [
        "group_id", "member_id", "share_session_epoch", "max_wait", "min_bytes", "max_bytes",
        "topics", "forgotten_topics_data"]
    assert _names(request.FetchPartition) == [
        "partition_index", "partition_max_bytes", "acknowledgement_batches"]
    assert "acquisition_lock_timeout" not in _names(v0.response_type)
    assert int(v0.request_type.__version__) == 0 and v0.flexible  # type: ignore[attr-defined]


@pytest.mark.parametrize("api_key", [ApiKey.SHARE_GROUP_HEARTBEAT, ApiKey.SHARE_GROUP_DESCRIBE,
                                     ApiKey.SHARE_ACKNOWLEDGE])
def test_the_other_v0s_have_v1s_fields(api_key: ApiKey) -> None:
    v0, v1 = protocol.schema(api_key, 0), protocol.schema(api_key, 1)
    for kind in ("request_type", "response_type"):
        assert _names(getattr(v0, kind)) == _names(getattr(v1, kind))
        assert getattr(v0, kind) is not getattr(v1, kind)


def test_a_v0_share_fetch_encodes_as_kafka_4_0s_schema_says() -> None:
    v0 = protocol.schema(ApiKey.SHARE_FETCH, 0)
    module = sys.modules[v0.request_type.__module__]
    topic_id = uuid.UUID(int=7)
    body = v0.request_type(
        group_id="g", member_id="m", share_session_epoch=3,
        max_wait=datetime.timedelta(milliseconds=500), min_bytes=1, max_bytes=1000,
        topics=(module.FetchTopic(topic_id=topic_id, partitions=(module.FetchPartition(
            partition_index=2, partition_max_bytes=4096,
            acknowledgement_batches=(module.AcknowledgementBatch(
                first_offset=5, last_offset=6, acknowledge_types=(1,)),)),)),),
        forgotten_topics_data=())
    frame = protocol.encode_request(body, correlation_id=9, client_id="c")
    header = struct.pack(">hhi", 78, 0, 9) + struct.pack(">h", 1) + b"c" + b"\x00"
    expected = (b"\x02g" + b"\x02m" + struct.pack(">iiii", 3, 500, 1, 1000)
                + b"\x02" + topic_id.bytes
                + b"\x02" + struct.pack(">ii", 2, 4096)
                + b"\x02" + struct.pack(">qq", 5, 6) + b"\x02\x01" + b"\x00"  # batch
                + b"\x00"  # partition's tags
                + b"\x00"  # topic's tags
                + b"\x01"  # no forgotten topics
                + b"\x00")  # request's tags
    assert frame[4:] == header + expected
    assert protocol.decode_request(frame[4:]).body == body


@pytest.mark.parametrize("api_key", SHARE_APIS)
def test_random_v0_requests_round_trip_and_the_soak_fuzzes_them(api_key: ApiKey) -> None:
    assert (int(api_key), 0) in served() and (int(api_key), 1) in served()
    rng = random.Random(int(api_key))
    for _ in range(50):
        body = random_body(rng, api_key, 0)
        assert int(body.__version__) == 0
        frame = protocol.encode_request(body, 1, "fuzz")
        # bytes, not bodies, compare: a null topic id reads back as the zero uuid
        assert protocol.encode_request(protocol.decode_request(frame[4:]).body, 1,
                                       "fuzz") == frame
