"""The KIP-848 draft's client-side assignor protocol (``protocol.client_assignors``): its two
APIs round-trip, ConsumerGroupHeartbeat's tagged fields are numbered outside Kafka's and leave
Kafka's bytes alone when absent, and the fuzz soak's corpus covers the APIs when served."""

from __future__ import annotations

import datetime
import importlib
import random
import sys
from typing import Any

import pytest

import protocol
from coordinator.soak import fuzz
from coordinator.soak.corpus import random_body, served
from protocol.client_assignors import (
    CLIENT_ASSIGNORS_TAG,
    INSTALL_ASSIGNMENT_KEY,
    PREPARE_ASSIGNMENT_KEY,
    SHOULD_COMPUTE_ASSIGNMENT_TAG,
)
from protocol.header import write_uvarint

DRAFT = (PREPARE_ASSIGNMENT_KEY, INSTALL_ASSIGNMENT_KEY)


def test_the_draft_apis_are_fuzzed_where_they_are_served() -> None:
    assert not set(served()) & {(key, 0) for key in DRAFT}
    assert {(key, 0) for key in DRAFT} <= set(served(client_assignors=True))
    assert fuzz.SERVER_OVERRIDES["group.consumer.client.assignors.enable"] == "true"
    assert protocol.api_name(PREPARE_ASSIGNMENT_KEY) == "ConsumerGroupPrepareAssignment"
    assert protocol.api_name(INSTALL_ASSIGNMENT_KEY) == "ConsumerGroupInstallAssignment"


@pytest.mark.parametrize(("api_key", "version"), [(k, 0) for k in DRAFT] + [(68, 0), (68, 1)])
def test_random_requests_round_trip(api_key: int, version: int) -> None:
    rng = random.Random(api_key + version)
    for _ in range(50):
        body = random_body(rng, api_key, version)
        frame = protocol.encode_request(body, 1, "fuzz")
        assert protocol.encode_request(protocol.decode_request(frame[4:]).body, 1,
                                       "fuzz") == frame


@pytest.mark.parametrize("version", [0, 1])
def test_the_heartbeat_without_the_draft_fields_is_kafkas_bytes(version: int) -> None:
    kio = importlib.import_module(f"kio.schema.consumer_group_heartbeat.v{version}.request")
    fields = dict(group_id="g", member_id="m", member_epoch=0, topic_partitions=(),
                  subscribed_topic_names=("a",),
                  rebalance_timeout=datetime.timedelta(seconds=30))
    ours = protocol.schema(68, version).request_type
    kafkas = protocol.encode_request(protocol.make(kio.ConsumerGroupHeartbeatRequest, **fields))
    assert protocol.encode_request(protocol.make(ours, **fields)) == kafkas
    with_list: Any = protocol.make(ours, **fields, client_assignors=(
        sys.modules[ours.__module__].Assignor(name="py", minimum_version=0, maximum_version=0,
                                              reason=0, version=0, metadata=b""),))
    tag = bytearray()
    write_uvarint(tag, CLIENT_ASSIGNORS_TAG)
    frame = protocol.encode_request(with_list)
    assert bytes(tag) in frame and len(frame) > len(kafkas)
    # a server without the draft (Kafka's reader) skips the tag: ours reads it back
    assert protocol.decode_request(frame[4:]).body == with_list


def test_should_compute_assignment_is_written_only_when_set() -> None:
    found = protocol.schema(68, 1)
    base = dict(member_id="m", member_epoch=3, heartbeat_interval=datetime.timedelta(seconds=1))
    plain = protocol.encode_response(found, 1, protocol.make(found.response_type, **base))
    told = protocol.encode_response(found, 1, protocol.make(
        found.response_type, **base, should_compute_assignment=True))
    tag = bytearray()
    write_uvarint(tag, SHOULD_COMPUTE_ASSIGNMENT_TAG)
    assert bytes(tag) not in plain[-4:] and len(told) == len(plain) + len(tag) + 2
    assert protocol.decode_response(found, told[4:])[1].should_compute_assignment
