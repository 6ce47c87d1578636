"""The SASL authentication of one connection, before any other request: Kafka's
``SaslServerAuthenticator``, without the socket (frames in, what to write and whether to go
on, out).

The states are Kafka's: first ApiVersions (optional, once) and SaslHandshake; any other request
closes the connection with no answer (IllegalSaslStateException), as does a second ApiVersions.
A handshake that names a mechanism not enabled is answered UNSUPPORTED_SASL_MECHANISM with the
enabled ones, then the connection closes. After a SaslHandshake v1 the client's tokens come in
SaslAuthenticate requests (another request is answered ILLEGAL_SASL_STATE and closes the
connection); after v0 they come as bare size-prefixed tokens and so do the answers (what
kafka-python and aiokafka fall back to against a broker that offers only v0). A failed
exchange is answered SASL_AUTHENTICATION_FAILED with Kafka's message (v0: no answer) and the
connection closes.
"""

from __future__ import annotations

import enum
import struct
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from protocol import (
    ApiKey,
    ErrorCode,
    ProtocolError,
    decode_request,
    encode_response,
    error_response,
    has_field,
    known_versions,
    make,
    peek_fixed,
    schema,
)

from .mechanism import SaslAuthenticationError, SaslError, SaslServer

_SIZE = struct.Struct(">i")
SASL_HANDSHAKE_VERSIONS = range(0, 2)
SASL_AUTHENTICATE_VERSIONS = range(0, 3)


class SaslState(enum.Enum):
    HANDSHAKE_OR_VERSIONS_REQUEST = "HANDSHAKE_OR_VERSIONS_REQUEST"
    HANDSHAKE_REQUEST = "HANDSHAKE_REQUEST"
    AUTHENTICATE = "AUTHENTICATE"
    COMPLETE = "COMPLETE"
    FAILED = "FAILED"


@dataclass(frozen=True, slots=True)
class Step:
    """What one frame led to: bytes to write (a whole frame, size prefix included, or empty),
    and whether authentication is complete, failed (write ``response``, then close), or goes
    on."""

    response: bytes = b""
    authenticated: bool = False
    failed: bool = False
    reason: str = ""


def _framed(payload: bytes) -> bytes:
    return _SIZE.pack(len(payload)) + payload


def _kafka_name(api_key: int) -> str:
    try:
        return ApiKey(api_key).name
    except ValueError:
        return str(api_key)


class SaslAuthenticator:
    def __init__(self, enabled: Sequence[str], servers: Mapping[str, Callable[[], SaslServer]],
                 api_versions: Callable[[bytes], bytes]) -> None:
        """``enabled``: the listener's mechanisms in their configured order; ``servers``: a
        factory per enabled mechanism; ``api_versions``: answers an ApiVersions frame (the
        whole response frame)."""
        self.enabled = list(enabled)
        self._servers = servers
        self._api_versions = api_versions
        self.state = SaslState.HANDSHAKE_OR_VERSIONS_REQUEST
        self.mechanism = ""
        self._server: SaslServer | None = None
        self._headers = True  # SaslHandshake v1+: tokens in SaslAuthenticate requests

    @property
    def principal(self) -> str:
        assert self._server is not None and self._server.complete
        return f"User:{self._server.authorization_id}"

    def receive(self, frame: bytes) -> Step:
        try:
            if self.state in (SaslState.HANDSHAKE_OR_VERSIONS_REQUEST,
                              SaslState.HANDSHAKE_REQUEST):
                return self._handshake_phase(frame)
            if self.state is SaslState.AUTHENTICATE:
                return self._authenticate(frame)
            return self._fail(f"Unexpected frame in SASL state {self.state.name}")
        except ProtocolError as exc:
            return self._fail(f"Invalid SASL request: {exc}")

    def _fail(self, reason: str, response: bytes = b"") -> Step:
        self.state = SaslState.FAILED
        return Step(response=response, failed=True, reason=reason)

    # --- before the handshake ------------------------------------------------------------
    def _handshake_phase(self, frame: bytes) -> Step:
        try:
            api_key, version, correlation_id = peek_fixed(frame)
        except ProtocolError:
            return self._fail("Exception handling first SASL packet from client, GSSAPI is not "
                              "supported by server")
        if api_key not in (ApiKey.API_VERSIONS, ApiKey.SASL_HANDSHAKE):
            return self._fail(f"Unexpected Kafka request of type {_kafka_name(api_key)} "
                              "during SASL handshake.")
        if api_key == ApiKey.API_VERSIONS:
            if self.state is not SaslState.HANDSHAKE_OR_VERSIONS_REQUEST:
                return self._fail("Unexpected ApiVersions request received during SASL "
                                  f"authentication state {self.state.name}")
            response = self._api_versions(frame)
            # an error answer (unsupported version, bad client software name) lets the client
            # try again, as in Kafka
            if len(response) >= 10 and response[8:10] == b"\x00\x00":
                self.state = SaslState.HANDSHAKE_REQUEST
            return Step(response=response)
        if version not in SASL_HANDSHAKE_VERSIONS:
            return self._fail(f"Version {version} is not supported for apiKey SASL_HANDSHAKE")
        request = decode_request(frame)
        mechanism = request.body.mechanism
        self._headers = version >= 1
        if mechanism not in self.enabled:
            body: Any = make(request.schema.response_type,
                             error_code=ErrorCode.unsupported_sasl_mechanism,
                             mechanisms=tuple(self.enabled))
            return self._fail(f"Unsupported SASL mechanism {mechanism}",
                              encode_response(request.schema, correlation_id, body))
        self.mechanism = mechanism
        self._server = self._servers[mechanism]()
        self.state = SaslState.AUTHENTICATE
        body = make(request.schema.response_type, error_code=ErrorCode.none,
                    mechanisms=tuple(self.enabled))
        return Step(response=encode_response(request.schema, correlation_id, body))

    # --- the mechanism's exchange --------------------------------------------------------
    def _authenticate(self, frame: bytes) -> Step:
        assert self._server is not None
        if not self._headers:
            return self._raw_token(frame)
        api_key, version, correlation_id = peek_fixed(frame)
        if api_key != ApiKey.SASL_AUTHENTICATE:
            reason = (f"Unexpected Kafka request of type {_kafka_name(api_key)} during SASL "
                      "authentication.")
            return self._fail(reason, self._illegal_state_answer(frame, api_key, version))
        if version not in SASL_AUTHENTICATE_VERSIONS:
            return self._fail(f"Version {version} is not supported for apiKey "
                              "SASL_AUTHENTICATE")
        request = decode_request(frame)

        def answer(**fields: Any) -> bytes:
            body: Any = make(request.schema.response_type, **fields)
            return encode_response(request.schema, correlation_id, body)

        try:
            challenge = self._server.evaluate(bytes(request.body.auth_bytes))
        except SaslAuthenticationError as exc:
            return self._fail(str(exc), answer(
                error_code=ErrorCode.sasl_authentication_failed, error_message=str(exc),
                auth_bytes=b""))
        except SaslError as exc:
            message = self.failure_message
            return self._fail(f"{message} ({exc})", answer(
                error_code=ErrorCode.sasl_authentication_failed, error_message=message,
                auth_bytes=b""))
        # session_lifetime_ms 0: connections.max.reauth.ms is not implemented (no KIP-368)
        response = answer(error_code=ErrorCode.none, error_message=None, auth_bytes=challenge)
        if self._server.complete:
            self.state = SaslState.COMPLETE
            return Step(response=response, authenticated=True)
        return Step(response=response)

    def _raw_token(self, token: bytes) -> Step:
        assert self._server is not None
        try:
            challenge = self._server.evaluate(token)
        except SaslAuthenticationError as exc:
            return self._fail(str(exc))
        except SaslError as exc:
            return self._fail(f"{self.failure_message} ({exc})")
        if self._server.complete:
            self.state = SaslState.COMPLETE
            return Step(response=_framed(challenge), authenticated=True)
        return Step(response=_framed(challenge))

    @property
    def failure_message(self) -> str:
        """What the client is told when the exchange fails with a ``SaslError``."""
        return ("Authentication failed during authentication due to invalid credentials with "
                f"SASL mechanism {self.mechanism}")

    @staticmethod
    def _illegal_state_answer(frame: bytes, api_key: int, version: int) -> bytes:
        """The request's own error response with ILLEGAL_SASL_STATE, when it has a top-level
        error code (Kafka's ``getErrorResponse``), else nothing."""
        if version not in known_versions(api_key):
            return b""
        try:
            found = schema(api_key, version)
            correlation_id = peek_fixed(frame)[2]
        except ProtocolError:
            return b""
        if not has_field(found.response_type, "error_code"):
            return b""
        body: Any = error_response(found.response_type, ErrorCode.illegal_sasl_state)
        return encode_response(found, correlation_id, body)

