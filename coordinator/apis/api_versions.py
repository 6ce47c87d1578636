"""ApiVersions: the table of what we serve, and the v0 answer for versions we do not."""

from __future__ import annotations

import re
import sys
from typing import Any

from coordinator import telemetry
from protocol import ErrorCode, encode_response, make, schema

from .context import RequestContext
from .registry import ApiRegistry

# Kafka's ApiVersionsRequest.isValid pattern for client software name and version.
_SOFTWARE = re.compile(r"[a-zA-Z0-9](?:[a-zA-Z0-9\-.]*[a-zA-Z0-9])?")


def _api_keys(registry: ApiRegistry, response_type: type) -> tuple[Any, ...]:
    api_version = sys.modules[response_type.__module__].ApiVersion
    return tuple(
        api_version(api_key=int(spec.key), min_version=registry.oldest(spec),
                    max_version=spec.max_version)
        for spec in registry.specs()
    )


def make_handler(registry: ApiRegistry):
    def handle(ctx: RequestContext, request: Any) -> Any:
        error = ErrorCode.none
        if ctx.version >= 3 and not (
            _SOFTWARE.fullmatch(request.client_software_name or "")
            and _SOFTWARE.fullmatch(request.client_software_version or "")
        ):
            error = ErrorCode.invalid_request
        elif ctx.version >= 3:
            telemetry.of(ctx.broker).note_software(ctx.connection_id,
                                                   request.client_software_name,
                                                   request.client_software_version)
        return ctx.respond(
            error_code=error,
            api_keys=_api_keys(registry, ctx.schema.response_type),
            finalized_features_epoch=-1,
        )

    return handle


def unsupported_version_frame(registry: ApiRegistry, correlation_id: int) -> bytes:
    """Kafka answers an ApiVersions request of a version it does not know in the v0 format,
    with UNSUPPORTED_VERSION and its ranges, so the client can retry with one it supports."""
    v0 = schema(18, 0)
    body: Any = make(v0.response_type, error_code=ErrorCode.unsupported_version,
                     api_keys=_api_keys(registry, v0.response_type))
    return encode_response(v0, correlation_id, body)
