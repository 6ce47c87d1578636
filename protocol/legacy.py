"""The request versions Kafka 3.9 served and 4.0 removed (KIP-896), for which kio (generated
from 4.x schemas) has no classes.

Such a request is read with kafka-python's message classes (generated from Kafka's schemas with
every version's fields), re-encoded as the codec's oldest version of its API (the *base*) and
decoded by kio, so the API's handler serves it as that version; its answer, encoded as the base
version, is read back with kafka-python and encoded as the version asked. What a base version
cannot carry both ways is converted by the API's hooks here: message formats v0/v1
(``protocol/message_sets.py``), ListOffsets v0's offset list, DescribeConfigs v0's
``IsDefault``, OffsetCommit v1's commit timestamps (handed to the handler as ``extras``).
"""

from __future__ import annotations

import struct
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from .apikeys import api_name
from .codec import decode_body, encode_request
from .errors import MalformedFrame
from .header import RequestHeader, parse_request_header
from .message_sets import to_message_set, to_record_batch
from .schemas import schema

_FRAME_HEAD = struct.Struct(">ii")
_SIZE = struct.Struct(">i")
DEFAULT_CONFIG = 5
"""DescribeConfigs' ConfigSource of a config at its default (v0 answers ``IsDefault``)."""
DEFAULT_TIMESTAMP = -1
"""OffsetCommit v1's commit timestamp meaning "now" (Kafka's ``DEFAULT_TIMESTAMP``)."""

Extras = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class LegacyApi:
    api_key: int
    oldest: int
    """The oldest version Kafka 3.9 served."""
    base: int
    """The codec's oldest version: older ones are served as this one."""
    upgrade: Callable[[Any, int], Extras] | None = None
    """Edits a decoded old request before it is re-encoded as the base version; returns what
    the handler needs that the base version cannot carry."""
    downgrade: Callable[[Any, int, Any], None] | None = None
    """Edits the decoded base answer before it is encoded as the old version (given the old
    request too)."""

    def serves(self, version: int) -> bool:
        return self.oldest <= version < self.base


@dataclass(frozen=True, slots=True)
class Upgraded:
    header: RequestHeader
    """The request's header, its version the base version."""
    body: Any
    """The kio body of the base version."""
    extras: Extras = field(default_factory=dict)
    request: Any = None
    """The request as decoded in its own version (kafka-python's message)."""


def _produce_up(request: Any, version: int) -> Extras:
    for topic in request.topic_data:
        for partition in topic.partition_data:
            partition.records = to_record_batch(partition.records)
    return {}


def _fetch_down(response: Any, version: int, request: Any) -> None:
    magic = 0 if version < 2 else 1
    starts = {(topic.topic, partition.partition): partition.fetch_offset
              for topic in request.topics for partition in topic.partitions}
    for topic in response.responses:
        for partition in topic.partitions:
            partition.records = to_message_set(
                partition.records, magic, starts.get((topic.topic, partition.partition_index), 0))


def _list_offsets_down(response: Any, version: int, request: Any) -> None:
    for topic in response.topics:
        for partition in topic.partitions:
            found = partition.error_code == 0 and partition.offset >= 0
            partition.old_style_offsets = [partition.offset] if found else []


def _describe_configs_down(response: Any, version: int, request: Any) -> None:
    for result in response.results:
        for config in result.configs:
            config.is_default = config.config_source == DEFAULT_CONFIG


def _offset_commit_up(request: Any, version: int) -> Extras:
    if version != 1:
        return {}
    stamps = {(topic.name, partition.partition_index): partition.commit_timestamp
              for topic in request.topics for partition in topic.partitions
              if partition.commit_timestamp != DEFAULT_TIMESTAMP}
    return {"commit_timestamps": stamps} if stamps else {}


LEGACY_APIS: dict[int, LegacyApi] = {api.api_key: api for api in (
    LegacyApi(0, 0, 3, upgrade=_produce_up),  # Produce
    LegacyApi(1, 0, 4, downgrade=_fetch_down),  # Fetch
    LegacyApi(2, 0, 1, downgrade=_list_offsets_down),  # ListOffsets
    LegacyApi(8, 0, 2, upgrade=_offset_commit_up),  # OffsetCommit
    LegacyApi(9, 0, 1),  # OffsetFetch
    LegacyApi(19, 0, 2),  # CreateTopics
    LegacyApi(20, 0, 1),  # DeleteTopics
    LegacyApi(29, 0, 1),  # DescribeAcls
    LegacyApi(30, 0, 1),  # CreateAcls
    LegacyApi(31, 0, 1),  # DeleteAcls
    LegacyApi(32, 0, 1, downgrade=_describe_configs_down),  # DescribeConfigs
)}
"""API key -> its removed versions, by Kafka 3.9's schemas (``validVersions``) and kio's."""


def _message_class(api: LegacyApi, request: bool) -> Any:
    """kafka-python's message class (imported on first use: ``serve`` does not import
    kafka-python unless a client sends one of these versions)."""
    from .reference import kafka_python_classes

    return kafka_python_classes()[(api.api_key, request)]


def _decode(cls: Any, data: memoryview, version: int) -> Any:
    try:
        message = cls.decode(data, version=version)
    except Exception as exc:  # kafka-python raises several types on bad input
        raise MalformedFrame(f"undecodable {cls.__name__} v{version}: {exc}") from exc
    message._header = None  # decode leaves it unset, and encode reads it
    return message


def upgrade_request(api: LegacyApi, frame: bytes | memoryview) -> Upgraded:
    """An old version's request frame as a request of the base version."""
    header, offset = parse_request_header(frame, 1)  # every removed version has header v1
    old = _decode(_message_class(api, True), memoryview(frame)[offset:],
                  header.api_version)
    try:
        extras = api.upgrade(old, header.api_version) if api.upgrade is not None else {}
        data = bytes(old.encode(version=api.base))
    except MalformedFrame:
        raise
    except Exception as exc:
        raise MalformedFrame(f"{api_name(api.api_key)} v{header.api_version}: {exc}") from exc
    body = decode_body(schema(api.api_key, api.base), data, 0)
    base_header = RequestHeader(header.api_key, api.base, header.correlation_id,
                                header.client_id, header.header_version)
    return Upgraded(base_header, body, extras, old)


def downgrade_response(api: LegacyApi, version: int, request: Any, frame: bytes) -> bytes:
    """A whole response frame of the base version (size prefix, header v0) as one of
    ``version`` (``request``: the old request); nothing stays nothing (a Produce, acks=0)."""
    if not frame:
        return frame
    _, correlation_id = _FRAME_HEAD.unpack_from(frame, 0)
    answer = _decode(_message_class(api, False), memoryview(frame)[8:], api.base)
    if api.downgrade is not None:
        api.downgrade(answer, version, request)
    body = bytes(answer.encode(version=version))
    return _FRAME_HEAD.pack(len(body) + 4, correlation_id) + body


def encode_legacy_request(api: LegacyApi, version: int, body: Any, correlation_id: int = 0,
                          client_id: str | None = "kafka-laptop") -> bytes:
    """A whole request frame of an old ``version`` with what the base version's kio ``body``
    holds (for tests, the fuzz soak and tools)."""
    base = encode_request(body, correlation_id, client_id)
    _, offset = parse_request_header(memoryview(base)[4:], 1)
    message = _decode(_message_class(api, True), memoryview(base)[4 + offset:],
                      api.base)
    message.with_header(correlation_id=correlation_id, client_id=client_id)
    data = bytes(message.encode(version=version, header=True))
    return _SIZE.pack(len(data)) + data
