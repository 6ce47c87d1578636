"""Kafka's ACL metadata records, in ``__cluster_metadata-0`` with the topic records.

``AccessControlEntryRecord`` and ``RemoveAccessControlEntryRecord`` are Kafka's metadata record
types 18 and 19, with Kafka's fields. Here every log shares one type-id namespace, where 18 and
19 are streams group records, so they get 1004 and 1005. The ACL's ``Id`` is the key; the value
of an AccessControlEntry holds the rest; a RemoveAccessControlEntry has an empty value (Kafka's
record has only the id).
"""

from __future__ import annotations

import uuid
from typing import ClassVar

from storage.codec import INT8, STRING, UUID, codec, f, record


@codec
@record
class AccessControlEntryKey:
    TYPE_ID: ClassVar[int] = 1004
    KAFKA_TYPE_ID: ClassVar[int] = 18
    id: uuid.UUID = f(UUID)


@codec
@record
class AccessControlEntryValue:
    VERSION: ClassVar[int] = 0
    resource_type: int = f(INT8)
    resource_name: str = f(STRING)
    pattern_type: int = f(INT8)
    principal: str = f(STRING)
    host: str = f(STRING)
    operation: int = f(INT8)
    permission_type: int = f(INT8)


@codec
@record
class RemoveAccessControlEntryKey:
    TYPE_ID: ClassVar[int] = 1005
    KAFKA_TYPE_ID: ClassVar[int] = 19
    id: uuid.UUID = f(UUID)


@codec
@record
class RemoveAccessControlEntryValue:
    VERSION: ClassVar[int] = 0
