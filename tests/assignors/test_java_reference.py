"""``bench assignor --java``'s input: the spec the Python bench times, as the Java harness
reads it (Kafka's topic ids, subscriptions, current assignments), and its digest."""

from __future__ import annotations

import uuid

from assignors import AssignmentSpec, MemberSpec, TopicMetadata
from assignors.java_reference import input_text, kafka_uuid


def test_topic_ids_are_written_as_kafka_prints_them() -> None:
    # Kafka's Uuid.toString: URL-safe base64 without padding
    assert kafka_uuid(uuid.UUID(int=1)) == "AAAAAAAAAAAAAAAAAAAAAQ"
    assert kafka_uuid(uuid.UUID(int=(1 << 128) - 1)) == "_____________________w"


def test_the_input_names_every_topic_member_subscription_and_holding() -> None:
    a, b = uuid.UUID(int=1), uuid.UUID(int=2)
    spec = AssignmentSpec.build(
        [MemberSpec("m1", frozenset({a, b}), assignment={a: (2, 0)}),
         MemberSpec("m0", frozenset({a}), assignment={a: (1,), b: (0,)}),
         MemberSpec("m2", frozenset())],
        [TopicMetadata(a, "ta", 3), TopicMetadata(b, "tb", 1)])
    ka, kb = kafka_uuid(a), kafka_uuid(b)
    # m0's partition of tb (not subscribed) stays in its current assignment, as the spec
    # keeps it; partitions ascending
    assert input_text(spec).splitlines() == [
        f"topic {ka} 3", f"topic {kb} 1",
        f"member m0 {ka} {ka}:1;{kb}:0",
        f"member m1 {ka},{kb} {ka}:0,2",
        "member m2 - -",
    ]
