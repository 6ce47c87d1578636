"""Our records of the KIP-848 draft's client-side assignors (seed 003; types 1030 and 1031, not
Kafka types: Kafka never shipped the design).

``ConsumerGroupMemberClientAssignors`` is the draft's ``Assignors`` field of a member's
metadata, in a record of its own so that Kafka's ``ConsumerGroupMemberMetadata`` stays
Kafka's: the client-side assignors a member listed in its heartbeat, in its order of
preference; a tombstone goes with the member's. ``ConsumerGroupClientAssignment`` says which
member computed a group's target with which client-side assignor (the draft's target
``Assignment Error`` included); the target itself is Kafka's target assignment records.
"""

from __future__ import annotations

from typing import ClassVar

from storage.codec import BYTES, INT8, INT16, INT32, STRING, Array, Struct, codec, f, record


@codec
@record
class ClientAssignor:
    name: str = f(STRING)
    minimum_version: int = f(INT16)
    maximum_version: int = f(INT16)
    reason: int = f(INT8, default=0)
    version: int = f(INT16, default=0)
    metadata: bytes = f(BYTES, default=b"")


@codec
@record
class ConsumerGroupMemberClientAssignorsKey:
    TYPE_ID: ClassVar[int] = 1030
    group_id: str = f(STRING)
    member_id: str = f(STRING)


@codec
@record
class ConsumerGroupMemberClientAssignorsValue:
    VERSION: ClassVar[int] = 0
    assignors: tuple[ClientAssignor, ...] = f(Array(Struct(ClientAssignor)), default=())


@codec
@record
class ConsumerGroupClientAssignmentKey:
    TYPE_ID: ClassVar[int] = 1031
    group_id: str = f(STRING)


@codec
@record
class ConsumerGroupClientAssignmentValue:
    VERSION: ClassVar[int] = 0
    assignment_epoch: int = f(INT32)
    assignor: str = f(STRING)
    member_id: str = f(STRING)
    """The member that computed it."""
    error: int = f(INT8, default=0)
