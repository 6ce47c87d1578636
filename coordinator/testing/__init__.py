"""Helpers for driving the real server from tests and benchmarks."""

from .server_process import ServerProcess, free_port, wait_until

__all__ = ["ServerProcess", "free_port", "wait_until"]
