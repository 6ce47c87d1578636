"""The test harness lives with the code (benchmarks use it too)."""

from coordinator.testing import ServerProcess, event_seconds, free_port, wait_until

__all__ = ["ServerProcess", "event_seconds", "free_port", "wait_until"]
