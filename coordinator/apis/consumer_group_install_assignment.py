"""ConsumerGroupInstallAssignment v0 (the KIP-848 draft, seed 003; API key 8481, served with
``group.consumer.client.assignors.enable``): the chosen member installs the target its
client-side assignor computed (``coordinator.groups.consumer.client_assignor``)."""

from __future__ import annotations

from typing import Any

from coordinator.groups.consumer.client_assignor import InstallRequest, InstallResponse, install
from coordinator.groups.consumer.env import env_for
from coordinator.runtime import CoordinatorError

from .consumer_group_prepare_assignment import refused
from .context import RequestContext
from .group_common import run_on_group_or_error


async def handle(ctx: RequestContext, request: Any) -> Any:
    answer = refused(ctx, request)
    if answer is not None:
        return answer
    env = env_for(ctx.broker)
    install_request = InstallRequest(
        group_id=request.group_id, member_id=request.member_id,
        member_epoch=request.member_epoch, group_epoch=request.group_epoch,
        error=request.error,
        members=tuple((m.member_id, tuple((tp.topic_id, tuple(tp.partitions))
                                          for tp in m.partitions))
                      for m in request.members))
    outcome = await run_on_group_or_error(
        ctx, request.group_id, lambda shard, now: install(shard, now, env, install_request),
        "ConsumerGroupInstallAssignment")
    if isinstance(outcome, CoordinatorError):
        return ctx.respond(error_code=outcome.code, error_message=outcome.message)
    assert isinstance(outcome, InstallResponse)
    return ctx.respond(error_code=outcome.error_code, error_message=outcome.error_message)
