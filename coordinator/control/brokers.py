"""The control endpoint's cluster routes (``cluster.brokers`` > 1): broker stops and starts,
partition leader and group coordinator moves, a broker's answers delayed, ``GET /brokers``.

Each runs on the event loop. A move changes the cluster model first (so that the Metadata and
FindCoordinator a client asks next already name the new leader), then its effects follow: a
stopped broker's listeners close and its connections drop (``App.unlisten``), the moved
partitions' logs stamp their next batches with the new leader epoch, the leaders and epochs are
saved (``coordinator/cluster/state_file.py``), and each move is logged, counted
(``cluster-moves-total``) and, for a coordinator partition, put in the rebalance timeline of each
of its groups (``coordinator-moved``).
"""

from __future__ import annotations

import time
from typing import Any

from coordinator import topiclog
from coordinator.cluster import Cluster, ClusterError, Move
from coordinator.cluster import state_file as cluster_state
from coordinator.cluster.model import COORDINATOR
from coordinator.observability import sensors, timeline
from coordinator.observability.logs import get_logger

log = get_logger("coordinator.control")

Answer = tuple[int, Any]


class ClusterRequestError(Exception):
    """Answered 400 with the message (an unknown broker, the last running broker, ...)."""


def cluster_of(app: Any) -> Cluster:
    cluster: Cluster | None = app.broker.cluster
    if cluster is None:
        raise ClusterRequestError("this server is a single broker (cluster.brokers is 1): there "
                                  "is nothing to stop, start or move")
    return cluster


def node_of(cluster: Cluster, text: Any, what: str = "broker") -> int:
    """A broker id from a path or a body, checked against the cluster."""
    try:
        if isinstance(text, bool):
            raise ValueError(text)
        node_id = int(text)
    except (TypeError, ValueError):
        raise ClusterRequestError(f"{what} must be a broker id (an integer), not {text!r}"
                                  ) from None
    try:
        cluster.broker(node_id)
    except ClusterError as exc:
        raise ClusterRequestError(str(exc)) from None
    return node_id


def _materialize(app: Any, cluster: Cluster) -> None:
    """Every data partition placed, so that what a broker leads is complete."""
    for topic in app.broker.image.topics():
        if not topic.is_internal:
            for index in range(topic.partitions):
                cluster.partition(topic.name, index)


def _log_end_offset(app: Any) -> Any:
    logs = topiclog.of(app.broker)

    def end(topic: str, index: int) -> int:
        found = logs.log_end_offset(topic, index)
        return 0 if found is None else found

    return end


def _apply(app: Any, cluster: Cluster, moves: list[Move]) -> None:
    logs = topiclog.of(app.broker)
    for move in moves:
        reason = "broker-stopped" if move.reason.endswith("stopped") else "moved"
        sensors.record_cluster_move(move.kind, reason)
        if move.kind == COORDINATOR:
            noted = timeline.note_coordinator_moved(move.partition, move.from_node,
                                                    move.to_node, move.leader_epoch,
                                                    move.reason)
            log.info("coordinator moved", partition=move.partition, from_node=move.from_node,
                     to_node=move.to_node, leader_epoch=move.leader_epoch, reason=move.reason,
                     groups=noted)
        else:
            plog = logs.get(move.topic, move.partition)
            if plog is not None:
                plog.leader_epoch = move.leader_epoch
            groups = _committed_to(app, move.topic, move.partition)
            timeline.note_partition_leader_moved(groups, move.topic, move.partition,
                                                 move.from_node, move.to_node,
                                                 move.leader_epoch, move.reason)
            log.info("partition leader moved", topic=move.topic, partition=move.partition,
                     from_node=move.from_node, to_node=move.to_node,
                     leader_epoch=move.leader_epoch, reason=move.reason, groups=len(groups))
    try:
        cluster_state.save(app.config.log_dir, cluster)
    except OSError as exc:
        log.warning("cluster state not saved", error=str(exc))


def _committed_to(app: Any, topic: str, index: int) -> list[str]:
    """The groups with a committed offset of the partition: those its move touches."""
    found: list[str] = []
    for partition in app.runtime.partitions:
        shard = partition.shard
        if shard is None:
            continue
        offsets = shard.offsets
        found.extend(group for group in offsets.groups()
                     if (topic, index) in offsets.group(group))
    return sorted(found)


def describe(app: Any, cluster: Cluster) -> list[dict[str, Any]]:
    """``GET /brokers``: each broker, its state, listeners, rack and what it leads."""
    _materialize(app, cluster)
    now = time.monotonic()
    out = []
    for node_id in cluster.ids:
        node = cluster.brokers[node_id]
        spec = app.broker_specs.get(node_id)
        listeners = {item.name: f"{item.host}:{item.port}"
                     for item in (spec.listeners if spec is not None else ())}
        out.append({
            "id": node_id,
            "state": "running" if node.running else "stopped",
            "listener": next(iter(listeners.values()), None),
            "listeners": listeners,
            "advertised": {name: f"{e.host}:{e.port}" for name, e in node.endpoints.items()},
            "rack": node.rack,
            "controller": node_id == cluster.controller_id,
            "partitions": [{"topic": topic, "partition": index,
                            "leader_epoch": cluster.partition(topic, index).leader_epoch}
                           for topic, index in cluster.led_by(node_id)],
            "coordinator_partitions": cluster.coordinators_led_by(node_id),
            "delay_ms": round(node.delay(now) * 1000),
        })
    return out


async def stop_broker(app: Any, node_id: int, load_ms: int = 0) -> Answer:
    cluster = cluster_of(app)
    if not cluster.brokers[node_id].running:
        return 200, {"broker": node_id, "state": "stopped", "moves": []}
    _materialize(app, cluster)
    try:
        moves = cluster.stop(node_id, _log_end_offset(app), time.monotonic() + load_ms / 1000)
    except ClusterError as exc:
        raise ClusterRequestError(str(exc)) from None
    _apply(app, cluster, moves)
    await app.unlisten(node_id)
    sensors.record_cluster_move("broker-stopped", "stopped")
    log.info("broker stopped", node_id=node_id, moves=len(moves))
    return 200, {"broker": node_id, "state": "stopped", "moves": [m.to_json() for m in moves]}


async def start_broker(app: Any, node_id: int) -> Answer:
    cluster = cluster_of(app)
    if not cluster.start(node_id):
        return 200, {"broker": node_id, "state": "running"}
    try:
        servers = await app.listen(node_id)
    except OSError as exc:
        cluster.brokers[node_id].running = False
        raise ClusterRequestError(f"broker {node_id} cannot listen again: {exc}") from None
    sensors.record_cluster_move("broker-started", "started")
    log.info("broker started", node_id=node_id, ports=[server.port for server in servers])
    return 200, {"broker": node_id, "state": "running"}


async def move_coordinator(app: Any, group: str, node_id: int, load_ms: int) -> Answer:
    cluster = cluster_of(app)
    partition = app.runtime.partition_for(group)
    try:
        move = cluster.move_coordinator(partition, node_id, time.monotonic() + load_ms / 1000)
    except ClusterError as exc:
        raise ClusterRequestError(str(exc)) from None
    if move is not None:
        _apply(app, cluster, [move])
    return 200, {"group": group, "coordinator_partition": partition, "broker": node_id,
                 "leader_epoch": cluster.coordinator(partition).leader_epoch,
                 "moved": move is not None, "load_ms": load_ms if move is not None else 0}


async def move_leader(app: Any, topic: str, index: int, node_id: int) -> Answer:
    cluster = cluster_of(app)
    found = app.broker.image.topic(topic)
    if found is None or found.is_internal:
        return 404, {"error": f"no data topic {topic}"}
    if not 0 <= index < found.partitions:
        return 404, {"error": f"topic {topic} has no partition {index} (it has "
                              f"{found.partitions})"}
    try:
        move = cluster.move_partition(topic, index, node_id, _log_end_offset(app)(topic, index))
    except ClusterError as exc:
        raise ClusterRequestError(str(exc)) from None
    if move is not None:
        _apply(app, cluster, [move])
    state = cluster.partition(topic, index)
    return 200, {"topic": topic, "partition": index, "leader": state.leader,
                 "leader_epoch": state.leader_epoch, "replicas": list(state.replicas),
                 "moved": move is not None}


async def delay_broker(app: Any, node_id: int, delay_ms: int, seconds: float) -> Answer:
    cluster = cluster_of(app)
    node = cluster.brokers[node_id]
    node.delay_s = delay_ms / 1000
    node.delay_until = time.monotonic() + seconds
    log.info("broker delayed", node_id=node_id, delay_ms=delay_ms, seconds=seconds)
    return 200, {"broker": node_id, "delay_ms": delay_ms, "seconds": seconds}


async def disconnect_broker(app: Any, node_id: int) -> Answer:
    """Drop every connection of a running broker; it keeps listening (its listeners close and
    bind again on the same ports)."""
    cluster = cluster_of(app)
    if not cluster.brokers[node_id].running:
        raise ClusterRequestError(f"broker {node_id} is stopped")
    await app.unlisten(node_id)
    await app.listen(node_id)
    sensors.record_cluster_move("broker-disconnected", "disconnected")
    log.info("broker connections dropped", node_id=node_id)
    return 200, {"broker": node_id, "state": "running", "disconnected": True}
