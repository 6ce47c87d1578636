"""Kafka's error codes, and the exceptions our codec raises."""

from kio.schema.errors import ErrorCode

__all__ = ["ErrorCode", "MalformedFrame", "ProtocolError", "UnknownApi", "UnknownSchema"]


class ProtocolError(Exception):
    """A frame we cannot answer; the connection that sent it is closed."""


class MalformedFrame(ProtocolError):
    """The bytes do not decode as the header or body they claim to be."""


class UnknownApi(ProtocolError):
    """An API key this codec has no schema for."""


class UnknownSchema(ProtocolError):
    """An (API key, version) pair this codec has no schema for."""
