"""StreamsGroupDescribe v0 (KIP-1071): each group read on its coordinator partition."""

from __future__ import annotations

from typing import Any

from coordinator.groups.streams.describe import GroupDescription, describe
from coordinator.groups.streams.model import Tasks, TasksTuple
from coordinator.groups.streams.topology import Topology, describe_view
from coordinator.runtime import CoordinatorError
from coordinator.security.acl import AclOperation, ResourceType
from protocol import ErrorCode

from .acl_common import group_operations, hides_topics
from .context import RequestContext

TOPOLOGY_TOPICS_HIDDEN = ("The described group uses topics that the client is not authorized "
                          "to describe.")


def topology_topics(topology: Topology) -> set[str]:
    """Every topic a topology names: source, repartition sink, repartition source and
    changelog topics (what Kafka authorizes for DESCRIBE)."""
    return {name for s in topology.subtopologies
            for name in (*s.source_topics, *s.repartition_sink_topics,
                         *(t.name for t in s.repartition_source_topics),
                         *(t.name for t in s.state_changelog_topics))}


def _task_ids(ctx: RequestContext, tasks: Tasks) -> tuple[Any, ...]:
    return tuple(ctx.nested("TaskIds", subtopology_id=s, partitions=tuple(sorted(tasks[s])))
                 for s in sorted(tasks) if tasks[s])


def _assignment(ctx: RequestContext, tasks: TasksTuple) -> Any:
    return ctx.nested("Assignment", active_tasks=_task_ids(ctx, tasks.active),
                      standby_tasks=_task_ids(ctx, tasks.standby),
                      warmup_tasks=_task_ids(ctx, tasks.warmup))


def _topic_info(ctx: RequestContext, info: Any) -> Any:
    return ctx.nested("TopicInfo", name=info.name, partitions=info.partitions,
                      replication_factor=info.replication_factor,
                      topic_configs=tuple(ctx.nested("KeyValue", key=k, value=v)
                                          for k, v in info.configs))


def _topology(ctx: RequestContext, found: GroupDescription) -> Any:
    if found.topology is None:
        return None
    view = describe_view(found.topology, found.configured)
    return ctx.nested("Topology", epoch=view.epoch, subtopologies=tuple(
        ctx.nested("Subtopology", subtopology_id=s.subtopology_id,
                   source_topics=s.source_topics,
                   repartition_sink_topics=s.repartition_sink_topics,
                   state_changelog_topics=tuple(_topic_info(ctx, t)
                                                for t in s.state_changelog_topics),
                   repartition_source_topics=tuple(_topic_info(ctx, t)
                                                   for t in s.repartition_source_topics))
        for s in view.subtopologies))


def _described(ctx: RequestContext, found: GroupDescription, include_ops: bool) -> Any:
    members = tuple(
        ctx.nested(
            "Member", member_id=m.member_id, member_epoch=m.member_epoch,
            instance_id=m.instance_id, rack_id=m.rack_id, client_id=m.client_id,
            client_host=m.client_host, topology_epoch=m.topology_epoch,
            process_id=m.process_id,
            user_endpoint=None if m.user_endpoint is None else ctx.nested(
                "Endpoint", host=m.user_endpoint.host, port=m.user_endpoint.port),
            client_tags=tuple(ctx.nested("KeyValue", key=k, value=v)
                              for k, v in m.client_tags),
            task_offsets=(), task_end_offsets=(), assignment=_assignment(ctx, m.assigned),
            target_assignment=_assignment(ctx, target), is_classic=False)
        for m, target in found.members)
    return ctx.nested(
        "DescribedGroup", error_code=found.error, error_message=found.error_message,
        group_id=found.group_id, group_state=found.state, group_epoch=found.group_epoch,
        assignment_epoch=found.assignment_epoch, topology=_topology(ctx, found),
        members=members,
        authorized_operations=group_operations(ctx, found.group_id, include_ops, found.error))


async def handle(ctx: RequestContext, request: Any) -> Any:
    runtime = ctx.broker.runtime
    include_ops = bool(request.include_authorized_operations)
    groups = []
    for group_id in request.group_ids:
        if not group_id:
            groups.append(_described(ctx, GroupDescription("", ErrorCode.invalid_group_id),
                                     False))
            continue

        def read(shard: Any, now: int, gid: str = group_id) -> GroupDescription:
            return describe(shard, gid)

        if not ctx.authorize(AclOperation.DESCRIBE, ResourceType.GROUP, group_id):
            groups.append(_described(ctx, GroupDescription(
                group_id, ErrorCode.group_authorization_failed), include_ops))
            continue
        try:
            found = await runtime.read(runtime.partition_for(group_id), read,
                                       name="StreamsGroupDescribe")
        except CoordinatorError as exc:
            found = GroupDescription(group_id, exc.code, exc.message)
        if found.topology is not None and hides_topics(ctx, topology_topics(found.topology)):
            found = GroupDescription(group_id, ErrorCode.topic_authorization_failed,
                                     TOPOLOGY_TOPICS_HIDDEN)
        groups.append(_described(ctx, found, include_ops))
    return ctx.respond(groups=tuple(groups))
