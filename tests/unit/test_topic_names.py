"""Kafka's topic-name rules and '.'/'_' collisions."""

from __future__ import annotations

import string

import pytest
from hypothesis import given
from hypothesis import strategies as st

from coordinator.metadata.image import MetadataImage, TopicCollision, TopicExists
from coordinator.metadata.topic_names import (
    INTERNAL_TOPICS,
    MAX_NAME_LENGTH,
    InvalidTopicName,
    unify_collision_chars,
    validate_topic_name,
)

LEGAL = string.ascii_letters + string.digits + "._-"


@pytest.mark.parametrize("name", ["a", "topic", "my.topic", "my_topic", "my-topic", "A1._-",
                                  "...", "._", "-", "x" * MAX_NAME_LENGTH, "__consumer_offsets"])
def test_legal_names(name: str) -> None:
    validate_topic_name(name)


@pytest.mark.parametrize(("name", "message"), [
    ("", "Topic name is illegal, it can't be empty"),
    (None, "Topic name is illegal, it can't be empty"),
    (".", 'Topic name cannot be "." or ".."'),
    ("..", 'Topic name cannot be "." or ".."'),
    ("x" * 250, "Topic name is illegal, it can't be longer than 249 characters, topic name: "
     + "x" * 250),
    ("a b", 'Topic name "a b" is illegal, it contains a character other than ASCII '
     "alphanumerics, '.', '_' and '-'"),
])
def test_illegal_names_get_kafkas_messages(name: str | None, message: str) -> None:
    with pytest.raises(InvalidTopicName) as info:
        validate_topic_name(name)
    assert str(info.value) == message


@pytest.mark.parametrize("name", ["a/b", "a\\b", "a:b", "a,b", "a*", "caf\u00e9", "\u0661",
                                  "tab\there", "new\nline", "trailing\n", "a\x00b", "é",
                                  "\uff21", "a+b", "a@b", "a#b"])
def test_illegal_characters(name: str) -> None:
    with pytest.raises(InvalidTopicName):
        validate_topic_name(name)


@given(st.text(alphabet=LEGAL, min_size=1, max_size=MAX_NAME_LENGTH))
def test_any_legal_alphabet_name_is_legal_unless_dots(name: str) -> None:
    if name in (".", ".."):
        with pytest.raises(InvalidTopicName):
            validate_topic_name(name)
    else:
        validate_topic_name(name)


@given(st.text(min_size=1, max_size=60))
def test_a_name_is_legal_exactly_when_kafka_says(name: str) -> None:
    legal = (len(name) <= MAX_NAME_LENGTH and name not in (".", "..")
             and all(c in LEGAL for c in name))
    if legal:
        validate_topic_name(name)
    else:
        with pytest.raises(InvalidTopicName):
            validate_topic_name(name)


def test_internal_topics() -> None:
    assert "__consumer_offsets" in INTERNAL_TOPICS
    image = MetadataImage()
    assert image.create_topic("__consumer_offsets", 50).is_internal
    assert not image.create_topic("consumer_offsets", 1).is_internal


def test_collisions_between_dot_and_underscore() -> None:
    assert unify_collision_chars("a.b_c") == "a_b_c"
    image = MetadataImage()
    image.create_topic("metrics.cpu", 1)
    assert image.colliding_topic("metrics_cpu") == "metrics.cpu"
    assert image.colliding_topic("metrics.cpu") is None  # the same name is not a collision
    assert image.colliding_topic("metrics-cpu") is None
    with pytest.raises(TopicCollision):
        image.create_topic("metrics_cpu", 1)
    with pytest.raises(TopicExists):
        image.create_topic("metrics.cpu", 1)
    # once deleted, the colliding name is free
    image.delete_topic("metrics.cpu")
    assert image.create_topic("metrics_cpu", 1).name == "metrics_cpu"


def test_image_listeners_hear_every_change() -> None:
    image = MetadataImage()
    heard = []
    unsubscribe = image.subscribe(lambda change: heard.append((change.kind.value,
                                                               change.topic.partitions)))
    topic = image.create_topic("t", 2)
    image.add_partitions("t", 5)
    found = image.topic_by_id(topic.topic_id)
    assert found is not None and found.partitions == 5
    image.delete_topic("t")
    assert image.topic_by_id(topic.topic_id) is None
    unsubscribe()
    image.create_topic("u", 1)
    assert heard == [("created", 2), ("partitions_added", 5), ("deleted", 5)]
