"""What a handler returns: the records to write and the response to send once they are durable.

A response may be ``Pending(key)``: the request is answered later, by a ``completion`` that some
later event (another member's request, a timer) returns for the same key. That is how a
JoinGroup waits for the rebalance to complete: delayed answers are data, not callbacks.
``effect`` changes in-memory state that is not records (a classic group's join phase); it runs
only once the records are written, so a failed write leaves the state as it was.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, field
from typing import Any

Record = tuple[Any, Any | None]
"""A coordinator record: (key, value), value None for a tombstone."""


@dataclass(frozen=True, slots=True)
class Pending:
    """The request is answered later by a completion for ``key``."""

    key: Hashable


@dataclass(frozen=True, slots=True)
class Result:
    records: Sequence[Record] = field(default_factory=tuple)
    response: Any = None
    completions: Sequence[tuple[Hashable, Any]] = field(default_factory=tuple)
    effect: Callable[[], None] | None = None
