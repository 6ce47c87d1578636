"""Errors the runtime answers with instead of a handler's response."""

from __future__ import annotations

from protocol import ErrorCode


class CoordinatorError(Exception):
    """A request could not be handled by its partition; ``code`` is Kafka's error for it."""

    def __init__(self, code: ErrorCode, message: str | None = None) -> None:
        super().__init__(message or code.name)
        self.code = code
        self.message = message


def load_in_progress(partition: int) -> CoordinatorError:
    return CoordinatorError(ErrorCode.coordinator_load_in_progress,
                            f"Coordinator partition {partition} is loading.")


def not_available(partition: int, why: str) -> CoordinatorError:
    return CoordinatorError(ErrorCode.coordinator_not_available,
                            f"Coordinator partition {partition} is not available: {why}")


def write_failed(partition: int, why: str) -> CoordinatorError:
    # Kafka answers a coordinator whose log append failed with NOT_COORDINATOR, so clients
    # rediscover the coordinator and retry.
    return CoordinatorError(ErrorCode.not_coordinator,
                            f"Coordinator partition {partition} could not write: {why}")
