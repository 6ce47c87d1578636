"""Helpers for driving the real server from tests and benchmarks."""

from .server_process import ServerProcess, free_port, wait_until
from .shard_context import ShardContext

__all__ = ["ServerProcess", "ShardContext", "free_port", "wait_until"]
