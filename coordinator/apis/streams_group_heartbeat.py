"""StreamsGroupHeartbeat v0 (KIP-1071, Kafka 4.3), written through the group's coordinator
partition. Internal topics the group's topology needs are created after the answer, as Kafka
4.1+ does (KafkaApis, not the coordinator, creates them; the heartbeat does not wait)."""

from __future__ import annotations

import asyncio
import datetime
from typing import Any

from coordinator.groups.streams.endpoints import EndpointPartitions
from coordinator.groups.streams.env import StreamsGroupEnv, env_for
from coordinator.groups.streams.heartbeat import (
    MISSING_INTERNAL_TOPICS,
    HeartbeatRequest,
    HeartbeatResponse,
    heartbeat,
    validate,
)
from coordinator.groups.streams.model import Endpoint, Tasks
from coordinator.groups.streams.topology import InternalTopic, Topology, validate_topic_names
from coordinator.metadata import topic_admin
from coordinator.observability.logs import get_logger
from coordinator.runtime import CoordinatorError
from coordinator.security.acl import AclOperation, ResourceType
from protocol import ErrorCode

from .context import RequestContext
from .group_common import client_host
from .streams_group_describe import topology_topics

log = get_logger("coordinator.apis.streams_group_heartbeat")

_ONE_MS = datetime.timedelta(milliseconds=1)
_creating: set[asyncio.Task[None]] = set()
"""Internal topic creations under way (kept so that they are not garbage collected)."""


def _tasks(ids: Any) -> Tasks | None:
    if ids is None:
        return None
    out: dict[str, set[int]] = {}
    for t in ids:
        out.setdefault(t.subtopology_id, set()).update(t.partitions)
    return {s: frozenset(p) for s, p in out.items() if p}


def _request(ctx: RequestContext, request: Any) -> HeartbeatRequest:
    endpoint = request.user_endpoint
    tags = request.client_tags
    return HeartbeatRequest(
        group_id=request.group_id, member_id=request.member_id,
        member_epoch=request.member_epoch,
        endpoint_information_epoch=request.endpoint_information_epoch,
        instance_id=request.instance_id, rack_id=request.rack_id,
        rebalance_timeout_ms=int(request.rebalance_timeout / _ONE_MS),
        topology=None if request.topology is None else Topology.from_request(request.topology),
        active_tasks=_tasks(request.active_tasks), standby_tasks=_tasks(request.standby_tasks),
        warmup_tasks=_tasks(request.warmup_tasks), process_id=request.process_id,
        user_endpoint=None if endpoint is None else Endpoint(endpoint.host, endpoint.port),
        client_tags=None if tags is None else tuple((kv.key, kv.value) for kv in tags),
        task_offsets=request.task_offsets is not None,
        task_end_offsets=request.task_end_offsets is not None,
        shutdown_application=bool(request.shutdown_application),
        client_id=ctx.header.client_id or "", client_host=client_host(ctx))


def _task_ids(ctx: RequestContext, tasks: Tasks) -> tuple[Any, ...]:
    return tuple(ctx.nested("TaskIds", subtopology_id=s, partitions=tuple(sorted(tasks[s])))
                 for s in sorted(tasks) if tasks[s])


def _endpoints(ctx: RequestContext, found: list[EndpointPartitions]) -> tuple[Any, ...]:
    def partitions(pairs: Any) -> tuple[Any, ...]:
        return tuple(ctx.nested("TopicPartition", topic=t, partitions=p) for t, p in pairs)

    return tuple(ctx.nested(
        "EndpointToPartitions",
        user_endpoint=ctx.nested("Endpoint", host=e.endpoint.host, port=e.endpoint.port),
        active_partitions=partitions(e.active), standby_partitions=partitions(e.standby))
        for e in found)


def _response(ctx: RequestContext, response: HeartbeatResponse) -> Any:
    tasks = response.tasks
    return ctx.respond(
        error_message=None, member_id=response.member_id, member_epoch=response.member_epoch,
        heartbeat_interval=datetime.timedelta(milliseconds=response.heartbeat_interval_ms),
        acceptable_recovery_lag=0, task_offset_interval=datetime.timedelta(0),
        status=tuple(ctx.nested("Status", status_code=code, status_detail=detail)
                     for code, detail in response.statuses),
        active_tasks=None if tasks is None else _task_ids(ctx, tasks.active),
        standby_tasks=None if tasks is None else _task_ids(ctx, tasks.standby),
        warmup_tasks=None if tasks is None else _task_ids(ctx, tasks.warmup),
        endpoint_information_epoch=response.endpoint_information_epoch,
        partitions_by_user_endpoint=None if response.endpoints is None
        else _endpoints(ctx, response.endpoints))


def _create_internal_topics(ctx: RequestContext, topics: tuple[InternalTopic, ...]) -> None:
    for topic in topics:
        if ctx.broker.image.topic(topic.name) is not None:
            continue
        task = asyncio.get_running_loop().create_task(_create(ctx, topic))
        _creating.add(task)
        task.add_done_callback(_creating.discard)


async def _create(ctx: RequestContext, topic: InternalTopic) -> None:
    try:
        await topic_admin.create_topic(ctx.broker, topic.name, topic.partitions,
                                       topic.replication_factor, (), dict(topic.configs))
    except topic_admin.TopicError as exc:
        if exc.code is not ErrorCode.topic_already_exists:
            log.warning("internal topic not created", topic=topic.name, error=exc.code.name,
                        message=exc.message)


async def handle(ctx: RequestContext, request: Any) -> Any:
    env: StreamsGroupEnv = env_for(ctx.broker)
    try:
        if not ctx.authorize(AclOperation.READ, ResourceType.GROUP, request.group_id):
            raise CoordinatorError(ErrorCode.group_authorization_failed)
        hb = _request(ctx, request)
        if hb.topology is not None:
            validate_topic_names(hb.topology)  # KafkaApis' check; the rest in validate()
            required = topology_topics(hb.topology)
            if len(ctx.authorized(AclOperation.DESCRIBE, ResourceType.TOPIC,
                                  required)) < len(required):
                raise CoordinatorError(ErrorCode.topic_authorization_failed)
        validate(hb)
        runtime = ctx.broker.runtime
        answer: HeartbeatResponse = await runtime.write(
            runtime.partition_for(hb.group_id),
            lambda shard, now: heartbeat(shard, now, env, hb), name="StreamsGroupHeartbeat",
            group_id=hb.group_id)
    except CoordinatorError as exc:
        return ctx.respond(error_code=exc.code, error_message=exc.message, member_id="",
                           member_epoch=0, status=(), active_tasks=None, standby_tasks=None,
                           warmup_tasks=None, partitions_by_user_endpoint=None)
    if answer.internal_topics:
        denied = _create_denied(ctx, answer.internal_topics)
        if denied:
            _report_create_denied(answer, denied)
        else:
            _create_internal_topics(ctx, answer.internal_topics)
    return _response(ctx, answer)


def _create_denied(ctx: RequestContext, topics: tuple[InternalTopic, ...]) -> list[str]:
    """The internal topics the principal may not create (CREATE on the cluster covers all)."""
    if ctx.authorize(AclOperation.CREATE, ResourceType.CLUSTER, log_denied=False):
        return []
    names = [t.name for t in topics]
    allowed = ctx.authorized(AclOperation.CREATE, ResourceType.TOPIC, names)
    return [name for name in names if name not in allowed]


def _report_create_denied(answer: HeartbeatResponse, denied: list[str]) -> None:
    """Kafka's MISSING_INTERNAL_TOPICS detail when the member may not create them."""
    detail = f"Unauthorized to CREATE on topics {', '.join(denied)}."
    for i, (code, existing) in enumerate(answer.statuses):
        if code == MISSING_INTERNAL_TOPICS:
            answer.statuses[i] = (code, f"{existing}; {detail}")
            return
    answer.statuses.append((MISSING_INTERNAL_TOPICS, detail))
