"""ConsumerGroupPrepareAssignment v0, as the KIP-848 draft specifies it (Kafka never shipped it,
so kio has no schema): the chosen member asks for the group state its client-side assignor
computes the assignment from. Written as kio writes its generated classes, so kio's reader and
our compiled writer handle it like any other message. API key: ``protocol.client_assignors``.
"""


import uuid
from dataclasses import dataclass, field
from typing import ClassVar

from kio.schema.request_header.v2.header import RequestHeader
from kio.schema.response_header.v1.header import ResponseHeader
from kio.static.constants import EntityType
from kio.static.primitive import i8, i16, i32, i32Timedelta

API_KEY = i16(8480)


class _Request:
    __type__: ClassVar = EntityType.request
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = API_KEY
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader


class _Response:
    __type__: ClassVar = EntityType.response
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = API_KEY
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader


class _ResponseNested:
    __type__: ClassVar = EntityType.nested
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = API_KEY
    __header_schema__: ClassVar[type[ResponseHeader]] = ResponseHeader


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupPrepareAssignmentRequest(_Request):
    group_id: str = field(metadata={"kafka_type": "string"})
    """The group identifier."""
    member_id: str = field(metadata={"kafka_type": "string"})
    """The member id assigned by the group coordinator."""
    member_epoch: i32 = field(metadata={"kafka_type": "int32"})
    """The member epoch."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Assignor(_ResponseNested):
    reason: i8 = field(metadata={"kafka_type": "int8"})
    """The reason reported by the member."""
    version: i16 = field(metadata={"kafka_type": "int16"})
    """The version of the metadata."""
    metadata: bytes = field(metadata={"kafka_type": "bytes"})
    """The member's metadata for the selected assignor."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicPartitions(_ResponseNested):
    topic_id: uuid.UUID | None = field(metadata={"kafka_type": "uuid"})
    """The topic ID."""
    partitions: tuple[i32, ...] = field(metadata={"kafka_type": "int32"}, default=())
    """The partitions."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Member(_ResponseNested):
    member_id: str = field(metadata={"kafka_type": "string"})
    """The member ID."""
    member_epoch: i32 = field(metadata={"kafka_type": "int32"})
    """The member epoch."""
    instance_id: str | None = field(metadata={"kafka_type": "string"}, default=None)
    """The member instance ID, or null."""
    rack_id: str | None = field(metadata={"kafka_type": "string"}, default=None)
    """The member rack ID, or null."""
    client_id: str = field(metadata={"kafka_type": "string"})
    """The client ID the member connects with (the draft's member model has it)."""
    client_host: str = field(metadata={"kafka_type": "string"})
    """The host the member connects from."""
    subscribed_topic_ids: tuple[uuid.UUID | None, ...] = field(
        metadata={"kafka_type": "uuid"}, default=())
    """The ids of the topics the member subscribes to (regex matches included)."""
    assignor: Assignor
    """The member's metadata for the selected assignor (empty if it lists none)."""
    topic_partitions: tuple[TopicPartitions, ...]
    """The member's partitions in the current target assignment."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicMetadata(_ResponseNested):
    topic_id: uuid.UUID | None = field(metadata={"kafka_type": "uuid"})
    """The topic ID."""
    topic_name: str = field(metadata={"kafka_type": "string"})
    """The topic name."""
    num_partitions: i32 = field(metadata={"kafka_type": "int32"})
    """The number of partitions."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupPrepareAssignmentResponse(_Response):
    throttle_time: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    """The duration in milliseconds for which the request was throttled."""
    error_code: i16 = field(metadata={"kafka_type": "int16"})
    """The top-level error code, or 0 if there was no error (an int16, not kio's ErrorCode:
    the draft's INVALID_ASSIGNMENT is no Kafka error code)."""
    error_message: str | None = field(metadata={"kafka_type": "string"}, default=None)
    """The top-level error message, or null if there was no error."""
    group_epoch: i32 = field(metadata={"kafka_type": "int32"})
    """The group epoch the state is at: the assignment is installed for it."""
    assignor_name: str = field(metadata={"kafka_type": "string"})
    """The selected client-side assignor."""
    members: tuple[Member, ...]
    """The members of the group."""
    topics: tuple[TopicMetadata, ...]
    """The topics the members subscribe to."""
