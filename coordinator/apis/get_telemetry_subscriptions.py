"""GetTelemetrySubscriptions v0 (KIP-714): the client's instance id and what to push, how
often and how big (``coordinator.telemetry``)."""

from __future__ import annotations

import datetime
from typing import Any

from coordinator import telemetry
from coordinator.telemetry.instances import TelemetryError
from protocol import ErrorCode

from .context import RequestContext

_ZERO = datetime.timedelta(0)


def handle(ctx: RequestContext, request: Any) -> Any:
    manager = telemetry.of(ctx.broker)
    try:
        answer = manager.get_subscriptions(request.client_instance_id, ctx.connection_id,
                                           ctx.header.client_id)
    except TelemetryError as exc:
        return ctx.respond(throttle_time=_ZERO, error_code=exc.code, client_instance_id=None,
                           subscription_id=0, push_interval=_ZERO, telemetry_max_bytes=0,
                           delta_temporality=False)
    return ctx.respond(
        throttle_time=_ZERO, error_code=ErrorCode.none,
        client_instance_id=answer.instance_id, subscription_id=answer.subscription_id,
        accepted_compression_types=answer.accepted_compression,
        push_interval=datetime.timedelta(milliseconds=answer.interval_ms),
        telemetry_max_bytes=answer.max_bytes, delta_temporality=True,
        requested_metrics=answer.metrics)
