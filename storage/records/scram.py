"""Kafka's SCRAM credential metadata record, in ``__cluster_metadata-0`` with the topic records.

``UserScramCredentialRecord`` is Kafka's metadata record type 11, with Kafka's fields. Here every
log shares one type-id namespace, where 11 is a share group record, so it gets 1006. The user
name and mechanism are the key and the rest is the value; Kafka's
``RemoveUserScramCredentialRecord`` (type 12: name and mechanism) is a tombstone of the key here.
"""

from __future__ import annotations

from typing import ClassVar

from storage.codec import BYTES, INT8, INT32, STRING, codec, f, record


@codec
@record
class UserScramCredentialKey:
    TYPE_ID: ClassVar[int] = 1006
    KAFKA_TYPE_ID: ClassVar[int] = 11
    name: str = f(STRING)
    mechanism: int = f(INT8)
    """Kafka's ``ScramMechanism`` type: 1 SCRAM-SHA-256, 2 SCRAM-SHA-512."""


@codec
@record
class UserScramCredentialValue:
    VERSION: ClassVar[int] = 0
    salt: bytes = f(BYTES)
    stored_key: bytes = f(BYTES)
    server_key: bytes = f(BYTES)
    iterations: int = f(INT32)
