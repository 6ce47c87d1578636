"""PushTelemetry v0 (KIP-714): a client's metrics, checked and kept as Kafka's
``ClientMetricsManager`` does (``coordinator.telemetry``), or refused with its error."""

from __future__ import annotations

import datetime
from typing import Any

from coordinator import telemetry
from coordinator.telemetry.instances import TelemetryError
from protocol import ErrorCode

from .context import RequestContext

_ZERO = datetime.timedelta(0)


def handle(ctx: RequestContext, request: Any) -> Any:
    try:
        telemetry.of(ctx.broker).push(
            request.client_instance_id, request.subscription_id, request.terminating,
            request.compression_type, request.metrics or b"", ctx.connection_id,
            ctx.header.client_id)
    except TelemetryError as exc:
        return ctx.respond(throttle_time=_ZERO, error_code=exc.code)
    return ctx.respond(throttle_time=_ZERO, error_code=ErrorCode.none)
