"""IncrementalAlterConfigs of the CLIENT_METRICS resource type (16): KIP-714's client-metrics
subscriptions (``coordinator.telemetry.subscriptions``), written to ``__cluster_metadata-0``."""

from __future__ import annotations

from typing import Any

from coordinator import telemetry
from coordinator.telemetry.subscriptions import SubscriptionError
from protocol import ErrorCode

from .context import RequestContext


async def alter(ctx: RequestContext, resource: Any, validate_only: bool
                ) -> tuple[ErrorCode, str | None]:
    ops = [(c.name, int(c.config_operation), c.value) for c in resource.configs]
    try:
        await telemetry.of(ctx.broker).alter(ctx.broker.metadata_log, resource.resource_name,
                                             ops, validate_only)
    except SubscriptionError as exc:
        code = ErrorCode.invalid_config if exc.invalid_config else ErrorCode.invalid_request
        return code, str(exc)
    except OSError as exc:
        return ErrorCode.unknown_server_error, f"Could not write the configs: {exc}"
    return ErrorCode.none, None
