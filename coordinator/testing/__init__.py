"""Helpers for driving the real server from tests and benchmarks.

``ShardContext`` is imported when first asked for: it loads the whole coordinator, and a test
that only starts a server process (``kafka_coordinator``'s pytest fixture) should not pay that.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .server_process import ServerProcess, event_seconds, free_port, wait_until

if TYPE_CHECKING:
    from .shard_context import ShardContext

__all__ = ["ServerProcess", "ShardContext", "event_seconds", "free_port", "wait_until"]


def __getattr__(name: str) -> Any:
    if name == "ShardContext":
        from .shard_context import ShardContext

        return ShardContext
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
