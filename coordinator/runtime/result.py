"""What a handler returns: the records to write and the response to send once they are durable."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

Record = tuple[Any, Any | None]
"""A coordinator record: (key, value), value None for a tombstone."""


@dataclass(frozen=True, slots=True)
class Result:
    records: Sequence[Record] = field(default_factory=tuple)
    response: Any = None
