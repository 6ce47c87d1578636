"""Committed offsets: OffsetCommitKey / OffsetCommitValue (type 1; legacy type 0 decodes too)."""

from __future__ import annotations

import uuid
from typing import ClassVar

from storage.codec import INT32, INT64, NUUID, STRING, codec, f, record


@codec(lower_camel=True)
@record
class OffsetCommitKey:
    TYPE_ID: ClassVar[int] = 1
    group: str = f(STRING)
    topic: str = f(STRING)
    partition: int = f(INT32)


@codec(lower_camel=True)
@record
class OffsetCommitValue:
    VERSION: ClassVar[int] = 0
    offset: int = f(INT64)
    leader_epoch: int = f(INT32, default=-1)
    metadata: str = f(STRING, default="")
    commit_timestamp: int = f(INT64)
    expire_timestamp: int = f(INT64, default=-1)
    topic_id: uuid.UUID | None = f(NUUID, default=None)
