"""ConsumerGroupInstallAssignment v0, as the KIP-848 draft specifies it (Kafka never shipped it,
so kio has no schema): the chosen member installs the assignment its client-side assignor
computed from ConsumerGroupPrepareAssignment's group state. API key:
``protocol.client_assignors``."""


import uuid
from dataclasses import dataclass, field
from typing import ClassVar

from kio.schema.request_header.v2.header import RequestHeader
from kio.schema.response_header.v1.header import ResponseHeader
from kio.static.constants import EntityType
from kio.static.primitive import i8, i16, i32, i32Timedelta

API_KEY = i16(8481)


class _Request:
    __type__: ClassVar = EntityType.request
    __version__: ClassVar[i16] = i16(0)
    __flexible__: ClassVar[bool] = True
    __api_key__: ClassVar[i16] = API_KEY
    __header_schema__: ClassVar[type[RequestHeader]] = RequestHeader


class _RequestNested:
    __type__: ClassVar = EntityType.nested
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


@dataclass(frozen=True, slots=True, kw_only=True)
class TopicPartitions(_RequestNested):
    topic_id: uuid.UUID | None = field(metadata={"kafka_type": "uuid"})
    """The topic ID."""
    partitions: tuple[i32, ...] = field(metadata={"kafka_type": "int32"}, default=())
    """The partitions."""


@dataclass(frozen=True, slots=True, kw_only=True)
class Member(_RequestNested):
    member_id: str = field(metadata={"kafka_type": "string"})
    """The member ID."""
    partitions: tuple[TopicPartitions, ...]
    """The partitions assigned to the member."""
    metadata_version: i16 = field(metadata={"kafka_type": "int16"})
    """The version of the metadata assigned to the member."""
    metadata_bytes: bytes = field(metadata={"kafka_type": "bytes"})
    """The metadata assigned to the member."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupInstallAssignmentRequest(_Request):
    group_id: str = field(metadata={"kafka_type": "string"})
    """The group identifier."""
    member_id: str = field(metadata={"kafka_type": "string"})
    """The member id assigned by the group coordinator."""
    member_epoch: i32 = field(metadata={"kafka_type": "int32"})
    """The member epoch."""
    group_epoch: i32 = field(metadata={"kafka_type": "int32"})
    """The group epoch of the state the assignment was computed from."""
    error: i8 = field(metadata={"kafka_type": "int8"})
    """The assignment error, or 0 if the assignment is successful."""
    members: tuple[Member, ...]
    """The assignment of each member."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ConsumerGroupInstallAssignmentResponse(_Response):
    throttle_time: i32Timedelta = field(metadata={"kafka_type": "timedelta_i32"})
    """The duration in milliseconds for which the request was throttled."""
    error_code: i16 = field(metadata={"kafka_type": "int16"})
    """The top-level error code, or 0 if there was no error (an int16, not kio's ErrorCode:
    the draft's INVALID_ASSIGNMENT is no Kafka error code)."""
    error_message: str | None = field(metadata={"kafka_type": "string"}, default=None)
    """The top-level error message, or null if there was no error."""
