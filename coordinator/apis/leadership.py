"""The data plane's leadership checks with ``cluster.brokers`` > 1: a partition's request at a
broker that does not lead it is answered NOT_LEADER_OR_FOLLOWER, and from Produce v10 and
Fetch v16 with the current leader and its endpoint (KIP-951's tagged fields); a current leader
epoch older than the partition's is FENCED_LEADER_EPOCH, a newer one UNKNOWN_LEADER_EPOCH. With
one broker every check is None at the cost of one attribute read."""

from __future__ import annotations

import time
from collections.abc import Iterable
from typing import Any

from coordinator.cluster import routing
from coordinator.cluster.model import PartitionState
from protocol import ErrorCode

from .context import RequestContext


def refusal(ctx: RequestContext, topic: str, index: int, current_leader_epoch: int = -1
            ) -> ErrorCode | None:
    """Why this broker does not serve the partition (None: it does)."""
    cluster = ctx.broker.cluster
    if cluster is None:
        return None
    return routing.leader_error(cluster, ctx.node, topic, index, current_leader_epoch)


def state(ctx: RequestContext, topic: str, index: int) -> PartitionState:
    """The partition's leadership (with one broker: this node, epoch 0)."""
    cluster = ctx.broker.cluster
    if cluster is None:
        return PartitionState(ctx.broker.node_id, 0, (ctx.broker.node_id,))
    return cluster.partition(topic, index)


def current_leader(ctx: RequestContext, topic: str, index: int) -> Any:
    """KIP-951's ``LeaderIdAndEpoch`` of the partition."""
    found = state(ctx, topic, index)
    return ctx.nested("LeaderIdAndEpoch", leader_id=found.leader, leader_epoch=found.leader_epoch)


def node_endpoints(ctx: RequestContext, nodes: Iterable[int]) -> tuple[Any, ...]:
    """KIP-951's ``NodeEndpoint`` of each leader named in the answer."""
    cluster = ctx.broker.cluster
    if cluster is None:
        return ()
    out = []
    for node in sorted(set(nodes)):
        endpoint = ctx.endpoint_of(node)
        out.append(ctx.nested("NodeEndpoint", node_id=node, host=endpoint.host,
                              port=endpoint.port, rack=cluster.brokers[node].rack))
    return tuple(out)


def coordinator_partitions(ctx: RequestContext, count: int) -> tuple[list[int], bool]:
    """The coordinator partitions this broker leads (all of them with one broker), and
    whether one of them is still loading after a move: ListGroups and ListTransactions answer
    for those, as each Kafka broker does for its own."""
    cluster = ctx.broker.cluster
    if cluster is None:
        return list(range(count)), False
    now = time.monotonic()
    led = [c for c in cluster.coordinators[:count] if c.leader == ctx.node]
    return [c.index for c in led], any(c.loading_until > now for c in led)
