"""Classic (JoinGroup/SyncGroup) group metadata: GroupMetadataKey / GroupMetadataValue (type 2)."""

from __future__ import annotations

from typing import ClassVar

from storage.codec import BYTES, INT32, INT64, NSTRING, STRING, Array, Struct, codec, f, record


@codec(lower_camel=True)
@record
class GroupMetadataKey:
    TYPE_ID: ClassVar[int] = 2
    group: str = f(STRING)


@codec(lower_camel=True)
@record
class MemberMetadata:
    member_id: str = f(STRING)
    group_instance_id: str | None = f(NSTRING, default=None)
    client_id: str = f(STRING)
    client_host: str = f(STRING)
    rebalance_timeout: int = f(INT32, default=-1)
    session_timeout: int = f(INT32)
    subscription: bytes = f(BYTES)
    assignment: bytes = f(BYTES)


@codec(lower_camel=True)
@record
class GroupMetadataValue:
    VERSION: ClassVar[int] = 0
    protocol_type: str = f(STRING)
    generation: int = f(INT32)
    protocol: str | None = f(NSTRING, default=None)
    leader: str | None = f(NSTRING, default=None)
    current_state_timestamp: int = f(INT64, default=-1)
    members: tuple[MemberMetadata, ...] = f(Array(Struct(MemberMetadata)), default=())
