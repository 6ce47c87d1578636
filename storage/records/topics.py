"""Our own record for topics created through the admin API (type 1000, not a Kafka type)."""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import ClassVar

from storage.codec import INT32, STRING, STRING_MAP, UUID, codec, f, record


@codec
@record
class TopicMetadataKey:
    TYPE_ID: ClassVar[int] = 1000
    name: str = f(STRING)


@codec
@record
class TopicMetadataValue:
    """A topic's id, partition count and topic configs (a ``dict``; the record is unhashable)."""

    VERSION: ClassVar[int] = 0
    topic_id: uuid.UUID = f(UUID)
    num_partitions: int = f(INT32)
    configs: Mapping[str, str] = f(
        STRING_MAP,
        default=None,  # type: ignore[arg-type]  # __post_init__ makes it {}
    )

    def __post_init__(self) -> None:
        if self.configs is None:
            object.__setattr__(self, "configs", {})
