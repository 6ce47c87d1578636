"""Our own record for per-group configs (type 1001, not a Kafka type), as an older store has it.

Group configs are Kafka's ``ConfigRecord``s of GROUP resources in the metadata log now
(``storage/records/configs.py``); stores written before kept them here, on the group's
coordinator partition. The key is the group id; the value every override the group had (a full
replacement, not a delta); a tombstone removes them all. Nothing writes a value any more: the
records are read to migrate them (``coordinator/groups/legacy_configs.py``), then tombstoned.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import ClassVar

from storage.codec import STRING, STRING_MAP, codec, f, record


@codec
@record
class GroupConfigKey:
    TYPE_ID: ClassVar[int] = 1001
    group_id: str = f(STRING)


@codec
@record
class GroupConfigValue:
    """Config name -> value as the admin client set it (a ``dict``; the record is unhashable)."""

    VERSION: ClassVar[int] = 0
    configs: Mapping[str, str] = f(
        STRING_MAP,
        default=None,  # type: ignore[arg-type]  # __post_init__ makes it {}
    )

    def __post_init__(self) -> None:
        if self.configs is None:
            object.__setattr__(self, "configs", {})
