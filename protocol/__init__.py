"""The Kafka wire codec: frames, headers and every request/response version we serve.

Imports nothing of ours. Message classes come from kio (generated from Kafka's schemas).
"""

from .apikeys import ApiKey, api_name
from .build import error_response, has_field, make
from .codec import Request, decode_request, decode_response, encode_request, encode_response
from .errors import ErrorCode, MalformedFrame, ProtocolError, UnknownApi, UnknownSchema
from .header import RequestHeader, parse_request_header, peek_fixed
from .schemas import Schema, known_versions, schema

__all__ = [
    "ApiKey",
    "ErrorCode",
    "MalformedFrame",
    "ProtocolError",
    "Request",
    "RequestHeader",
    "Schema",
    "UnknownApi",
    "UnknownSchema",
    "api_name",
    "decode_request",
    "decode_response",
    "encode_request",
    "encode_response",
    "error_response",
    "has_field",
    "known_versions",
    "make",
    "parse_request_header",
    "peek_fixed",
    "schema",
]
