"""ConsumerGroupHeartbeat v0-v1 (KIP-848), written through the group's coordinator partition."""

from __future__ import annotations

import asyncio
import datetime
import uuid
from collections.abc import Callable
from typing import Any

from coordinator.groups.consumer.assignment_forms import by_topic_id
from coordinator.groups.consumer.client_selection import ClientAssignor
from coordinator.groups.consumer.env import ConsumerGroupEnv, env_for
from coordinator.groups.consumer.heartbeat import (
    HeartbeatRequest,
    HeartbeatResponse,
    heartbeat,
    validate,
)
from coordinator.groups.consumer.steady import (
    SteadyHeartbeats,
    is_steady_request,
    steady_heartbeat,
)
from coordinator.runtime import CoordinatorError, Result
from coordinator.security.acl import AclOperation, ResourceType
from protocol import ErrorCode
from protocol.encoded import EncodedBody, encode_body

from .context import Repeatable, RequestContext, answer_later

_ONE_MS = datetime.timedelta(milliseconds=1)


def _ms(value: Any) -> int:
    return int(value / _ONE_MS) if isinstance(value, datetime.timedelta) else int(value)


_hosts: dict[str, str] = {}


def _client_host(connection_id: str) -> str:
    # Connections are named "host:port-n"; Kafka reports InetAddress.toString(), "/host".
    host = _hosts.get(connection_id)
    if host is None:
        if len(_hosts) >= 10_000:
            _hosts.clear()
        host = _hosts[connection_id] = "/" + connection_id.rsplit("-", 1)[0].rsplit(":", 1)[0]
    return host


def _client_assignors(request: Any) -> tuple[ClientAssignor, ...] | None:
    """The draft's ``ClientAssignors`` tagged field (seed 003), as the group keeps them."""
    listed = getattr(request, "client_assignors", None)
    return None if listed is None else tuple(
        ClientAssignor(a.name, a.minimum_version, a.maximum_version, a.reason, a.version,
                       bytes(a.metadata)) for a in listed)


def _request(ctx: RequestContext, request: Any, client_assignors: bool = False
             ) -> HeartbeatRequest:
    member_id = request.member_id
    if ctx.version == 0 and not member_id and request.member_epoch == 0:
        member_id = str(uuid.uuid4())  # v0: the coordinator generates the member id
    owned = None if request.topic_partitions is None else tuple(
        (tp.topic_id, tuple(tp.partitions)) for tp in request.topic_partitions)
    return HeartbeatRequest(
        group_id=request.group_id, member_id=member_id, member_epoch=request.member_epoch,
        instance_id=request.instance_id, rack_id=request.rack_id,
        rebalance_timeout_ms=_ms(request.rebalance_timeout),
        subscribed_topic_names=request.subscribed_topic_names,
        subscribed_topic_regex=getattr(request, "subscribed_topic_regex", None),
        server_assignor=request.server_assignor, owned=owned,
        client_id=ctx.header.client_id or "", client_host=_client_host(ctx.connection_id),
        client_assignors=_client_assignors(request) if client_assignors else None)


_validated_requests: dict[tuple[int, str | None, str], tuple[Any, HeartbeatRequest]] = {}
_VALIDATED_KEPT = 100_000


def _validated(ctx: RequestContext, request: Any, env: ConsumerGroupEnv) -> HeartbeatRequest:
    """The request, validated. A steady member's body is the same object each time (the
    codec keeps repeated bodies, ``protocol.repeated``): its validated request is kept too,
    per body, client id and connection (what the request carries besides the body)."""
    key = (id(request), ctx.header.client_id, ctx.connection_id)
    kept = _validated_requests.get(key)
    if kept is not None and kept[0] is request:
        return kept[1]
    hb = _request(ctx, request, env.settings.client_assignors)
    validate(hb, env.settings.assignors)  # raises: nothing is kept
    if ctx.version > 0 or request.member_id:  # v0 may get a new member id each time
        if len(_validated_requests) >= _VALIDATED_KEPT:
            _validated_requests.clear()
        _validated_requests[key] = (request, hb)
    return hb


_steady_bodies: dict[tuple[int, str, int, int], EncodedBody] = {}
_STEADY_BODIES_KEPT = 100_000


def _steady_body(ctx: RequestContext, response: HeartbeatResponse) -> EncodedBody:
    """The answer without an assignment, encoded once per member, epoch and interval: what a
    steady member gets every heartbeat."""
    key = (ctx.version, response.member_id, response.member_epoch,
           response.heartbeat_interval_ms)
    body = _steady_bodies.get(key)
    if body is None:
        if len(_steady_bodies) >= _STEADY_BODIES_KEPT:
            _steady_bodies.clear()
        body = _steady_bodies[key] = encode_body(ctx.schema, ctx.respond(
            error_message=None, member_id=response.member_id,
            member_epoch=response.member_epoch,
            heartbeat_interval=datetime.timedelta(milliseconds=response.heartbeat_interval_ms),
            assignment=None))
    return body


def _response(ctx: RequestContext, response: HeartbeatResponse) -> Any:
    if response.assignment is None and not response.should_compute_assignment:
        return _steady_body(ctx, response)
    assignment = None
    if response.assignment is not None:
        assignment = ctx.nested("Assignment", topic_partitions=tuple(
            ctx.nested("TopicPartitions", topic_id=topic_id, partitions=tuple(sorted(parts)))
            for topic_id, parts in sorted(response.assignment.items(), key=by_topic_id)))
    return ctx.respond(error_message=None, member_id=response.member_id,
                       member_epoch=response.member_epoch,
                       heartbeat_interval=datetime.timedelta(
                           milliseconds=response.heartbeat_interval_ms),
                       assignment=assignment,
                       should_compute_assignment=response.should_compute_assignment)


def handle(ctx: RequestContext, request: Any) -> Any:
    """The response, or (when it must wait: queued events, an fsync) a coroutine for it. A
    steady heartbeat on an idle partition is answered here, without suspending."""
    env: ConsumerGroupEnv = env_for(ctx.broker)
    denied = unauthorized(ctx, request.group_id, request.subscribed_topic_names)
    if denied is not None:
        return _error(ctx, CoordinatorError(denied))
    try:
        hb = _validated(ctx, request, env)
        runtime = ctx.broker.runtime

        def handler(shard: Any, now: int) -> Result:
            # a heartbeat that changes nothing takes the fast path (``steady``)
            steady = steady_heartbeat(shard, now, env, hb)
            return heartbeat(shard, now, env, hb) if steady is None else steady

        answer = runtime.submit(runtime.partition_for(hb.group_id), True, handler,
                                name="ConsumerGroupHeartbeat", group_id=hb.group_id)
    except CoordinatorError as exc:
        return _error(ctx, exc)
    if answer.done():
        outcome = _outcome(ctx, answer)
        if (type(outcome) is EncodedBody and ctx.broker.authorizer is None
                and is_steady_request(hb)):
            return Repeatable(outcome, _again(ctx, env, hb))
        return outcome
    # answered from the event's future by callbacks: no task of its own per waiting heartbeat
    return answer_later(answer, lambda response: _response(ctx, response),
                        lambda exc: _error(ctx, exc))


def _again(ctx: RequestContext, env: ConsumerGroupEnv, hb: HeartbeatRequest
           ) -> Callable[[int], EncodedBody | None]:
    """How to answer the same steady heartbeat again at ``now_ms``: on the steady path only
    (``SteadyHeartbeats.again``), run at once on its partition's shard if the runtime would
    run it at once (``ready_shard``; the connection times it, ``ran_now``). Only without an
    authorizer (whose ACLs may change): ``handle`` makes no shortcut otherwise."""
    runtime = ctx.broker.runtime

    def body_for(interval: int) -> EncodedBody:
        return _steady_body(ctx, HeartbeatResponse(hb.member_id, hb.member_epoch, interval))

    return SteadyHeartbeats(env, hb, runtime.ready_shard, runtime.partition_for(hb.group_id),
                            body_for).again


def unauthorized(ctx: RequestContext, group_id: str, subscribed: Any) -> ErrorCode | None:
    """Kafka's checks before a heartbeat reaches the group: READ on the group, and DESCRIBE on
    every subscribed topic named (share groups check the same)."""
    if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, group_id):
        return ErrorCode.group_authorization_failed
    if subscribed:
        names = set(subscribed)
        if len(ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC, names)) < len(names):
            return ErrorCode.topic_authorization_failed
    return None


def _outcome(ctx: RequestContext, answer: asyncio.Future[HeartbeatResponse]) -> Any:
    error = answer.exception()
    if isinstance(error, CoordinatorError):
        return _error(ctx, error)
    if error is not None:
        raise error
    return _response(ctx, answer.result())


def _error(ctx: RequestContext, exc: CoordinatorError) -> Any:
    return ctx.respond(error_code=exc.code, error_message=exc.message, member_id=None,
                       member_epoch=0, assignment=None)
