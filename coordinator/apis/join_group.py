"""JoinGroup v0-v9."""

from __future__ import annotations

import datetime
from typing import Any

from coordinator.groups import classic_protocol
from coordinator.groups.classic import join as classic
from coordinator.security.acl import AclOperation, ResourceType
from protocol import ErrorCode

from .context import RequestContext
from .group_common import client_host, run_on_group

_MS = datetime.timedelta(milliseconds=1)


def _ms(value: datetime.timedelta) -> int:
    return int(value / _MS)


async def handle(ctx: RequestContext, request: Any) -> Any:
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
        return _respond(ctx, classic.JoinOutcome(ErrorCode.group_authorization_failed))
    session_ms = _ms(request.session_timeout)
    rebalance = getattr(request, "rebalance_timeout", None)
    join = classic.JoinRequest(
        group_id=request.group_id, member_id=request.member_id,
        group_instance_id=getattr(request, "group_instance_id", None),
        session_timeout_ms=session_ms,
        # v0 has no rebalance timeout: Kafka uses the session timeout.
        rebalance_timeout_ms=_ms(rebalance) if rebalance is not None else session_ms,
        protocol_type=request.protocol_type,
        protocols=tuple((p.name, bytes(p.metadata)) for p in request.protocols),
        client_id=ctx.header.client_id or "", client_host=client_host(ctx),
        require_known_member_id=ctx.version >= 4, reason=getattr(request, "reason", None))
    outcome = await run_on_group(
        ctx, request.group_id, lambda shard, now: classic_protocol.join(shard, join, now),
        "JoinGroup")
    if isinstance(outcome, ErrorCode):
        outcome = classic.JoinOutcome(outcome, request.member_id)
    return _respond(ctx, outcome)


def _respond(ctx: RequestContext, outcome: classic.JoinOutcome) -> Any:
    return ctx.respond(
        error_code=outcome.error, generation_id=outcome.generation_id,
        protocol_type=outcome.protocol_type, protocol_name=outcome.protocol_name or (
            "" if ctx.version < 7 else None),
        leader=outcome.leader, skip_assignment=outcome.skip_assignment,
        member_id=outcome.member_id,
        members=tuple(ctx.nested("JoinGroupResponseMember", member_id=member_id,
                                 group_instance_id=instance_id, metadata=metadata)
                      for member_id, instance_id, metadata in outcome.members))
