"""SaslHandshake v0-1 after authentication, or on a listener without SASL.

A SASL listener handles the handshake before any other request (``coordinator/server.py`` with
``coordinator/security/sasl.py``); one that reaches the API layer comes too late, and Kafka's
``KafkaApis`` answers it ILLEGAL_SASL_STATE."""

from __future__ import annotations

from typing import Any

from protocol import ErrorCode

from .context import RequestContext


def handle(ctx: RequestContext, request: Any) -> Any:
    return ctx.respond(error_code=ErrorCode.illegal_sasl_state, mechanisms=())
