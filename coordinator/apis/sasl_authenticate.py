"""SaslAuthenticate v0-2 after authentication, or on a listener without SASL.

The exchange itself runs before any other request on a SASL listener
(``coordinator/security/sasl.py``); here, as in Kafka's ``KafkaApis``, it is too late: the
answer is ILLEGAL_SASL_STATE (no re-authentication: ``connections.max.reauth.ms`` is not
implemented, so session lifetimes are 0)."""

from __future__ import annotations

from typing import Any

from protocol import ErrorCode

from .context import RequestContext


def handle(ctx: RequestContext, request: Any) -> Any:
    return ctx.respond(error_code=ErrorCode.illegal_sasl_state,
                       error_message="SaslAuthenticate request received after successful "
                       "authentication", auth_bytes=b"")
