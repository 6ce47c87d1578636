"""IncrementalAlterConfigs and AlterConfigs of GROUP resources (32): per-group configs.

The new overrides are computed (``altered``: IncrementalAlterConfigs' SET and DELETE;
``replaced``: AlterConfigs' configs as a whole), validated as Kafka's ``GroupConfig.validate``
does (INVALID_CONFIG with its message) and written as ``ConfigRecord``s of the GROUP resource to
the metadata log, as Kafka's controller keeps them: the group does not have to exist, and its
coordinator partition's state (loading, say) does not matter.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from coordinator.groups.common import group_configs
from coordinator.metadata import topic_configs
from coordinator.metadata.config_resources import GROUP
from coordinator.metadata.topic_configs import AlterError
from protocol import ErrorCode

from .context import RequestContext

SET, DELETE, APPEND, SUBTRACT = 0, 1, 2, 3
Op = tuple[str, int, str | None]
"""(config name, IncrementalAlterConfigs operation, value)."""


def altered(old: Mapping[str, str], ops: Sequence[Op], broker_config: Any) -> dict[str, str]:
    """The group's overrides after IncrementalAlterConfigs' ``ops``, validated (AlterError
    says why not)."""
    new = dict(old)
    for name, operation, value in ops:
        if name not in group_configs.GROUP_CONFIG_NAMES:
            raise AlterError(ErrorCode.invalid_config, f"Unknown group config name: {name}")
        if operation == SET:
            if value is None:
                raise AlterError(ErrorCode.invalid_request,
                                 f"Null value not supported for : {name}")
            new[name] = value
        elif operation == DELETE:
            new.pop(name, None)
        elif operation in (APPEND, SUBTRACT):
            verb = "append" if operation == APPEND else "subtract"
            raise AlterError(ErrorCode.invalid_config,
                             f"Config value {verb} is not allowed for config key: {name}")
        else:
            raise AlterError(ErrorCode.invalid_request,
                             f"Unknown alter config operation {operation}")
    return validated(new, broker_config)


def replaced(configs: Sequence[tuple[str, str | None]], broker_config: Any) -> dict[str, str]:
    """The group's overrides AlterConfigs gives: exactly ``configs``, validated."""
    return validated(topic_configs.legacy(configs), broker_config)


def validated(new: dict[str, str], broker_config: Any) -> dict[str, str]:
    try:
        group_configs.validate(new, broker_config)
    except group_configs.GroupConfigError as exc:
        raise AlterError(ErrorCode.invalid_config, str(exc)) from None
    return new


async def alter(ctx: RequestContext, group_id: str,
                change: Callable[[Mapping[str, str], Any], dict[str, str]],
                validate_only: bool) -> tuple[ErrorCode, str | None]:
    """Set the group's overrides to ``change(current overrides, broker config)``."""
    if not group_id:
        return ErrorCode.invalid_request, "Group id must not be empty."
    broker = ctx.broker
    try:
        await broker.image.configs.alter(broker.metadata_log, GROUP, group_id,
                                         lambda old: change(old, broker.config), validate_only)
    except AlterError as exc:
        return exc.code, exc.message
    except OSError as exc:
        return ErrorCode.unknown_server_error, f"Could not write the configs: {exc}"
    return ErrorCode.none, None
