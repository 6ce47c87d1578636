"""The cluster one process presents: brokers 1..N, who leads what, and how that moves.

A simulation for tests over one store, not a replicated system: no data is copied between
brokers; the replicas and the ISR are reported as Kafka would report them (the ISR is the
running replicas). Every data partition has a leader, a leader epoch and a replica list of the
topic's replication factor, placed round-robin from a start broker derived from the topic's name
(Kafka starts at a random broker); the coordinator partitions (``__consumer_offsets``, whose
partitions also hold the transactional ids) are placed from broker 1. A partition's state is
made when it is first asked for, so a broker stopped before then is simply not its leader.

A leader change bumps the partition's leader epoch and remembers the log end offset the new
epoch starts at, for OffsetForLeaderEpoch (Kafka's ``LeaderEpochFileCache``). Pure: no I/O, no
clock; callers pass the log end offsets and the times.
"""

from __future__ import annotations

import zlib
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

UNDEFINED_EPOCH = -1
UNDEFINED_OFFSET = -1

PARTITION_LEADER = "partition-leader"
COORDINATOR = "coordinator"


class ClusterError(ValueError):
    """A move the cluster refuses (unknown broker, the last running broker, ...): the message
    says why."""


@dataclass(slots=True)
class Endpoint:
    host: str
    port: int


@dataclass(slots=True)
class BrokerNode:
    node_id: int
    rack: str | None = None
    endpoints: dict[str, Endpoint] = field(default_factory=dict)
    """What the broker advertises, by listener name."""
    running: bool = True
    delay_s: float = 0.0
    delay_until: float = 0.0
    """Its answers are delayed by ``delay_s`` until this time (the caller's clock, seconds)."""

    def delay(self, now: float) -> float:
        return self.delay_s if now < self.delay_until else 0.0


@dataclass(slots=True)
class PartitionState:
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    epoch_starts: list[tuple[int, int]] = field(default_factory=lambda: [(0, 0)])
    """(leader epoch, the offset it starts at), oldest first."""

    def end_offset_for(self, epoch: int, log_end_offset: int) -> tuple[int, int]:
        """(epoch, end offset) OffsetForLeaderEpoch answers for ``epoch``: the latest epoch ends
        at the log end; an older one where the next one starts; one newer than the latest is
        unknown (Kafka's ``LeaderEpochFileCache.endOffsetFor``)."""
        if epoch == UNDEFINED_EPOCH or epoch > self.leader_epoch:
            return UNDEFINED_EPOCH, UNDEFINED_OFFSET
        if epoch == self.leader_epoch:
            return epoch, log_end_offset
        floor: int | None = None
        for known, start in self.epoch_starts:
            if known > epoch:
                return (epoch if floor is None else floor), start
            floor = known
        return self.leader_epoch, log_end_offset

    def isr(self, running: Callable[[int], bool]) -> tuple[int, ...]:
        return tuple(node for node in self.replicas if running(node))


@dataclass(slots=True)
class CoordinatorPartition:
    index: int
    leader: int
    leader_epoch: int
    replicas: tuple[int, ...]
    loading_until: float = 0.0
    """The new leader answers COORDINATOR_LOAD_IN_PROGRESS until then (the caller's clock)."""


@dataclass(frozen=True, slots=True)
class Move:
    """One leadership change: ``kind`` is ``partition-leader`` (``topic``/``partition``) or
    ``coordinator`` (``partition`` is the coordinator partition)."""

    kind: str
    topic: str
    partition: int
    from_node: int
    to_node: int
    leader_epoch: int
    reason: str

    def to_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "topic": self.topic, "partition": self.partition,
                "from": self.from_node, "to": self.to_node, "leader_epoch": self.leader_epoch,
                "reason": self.reason}


def _start(topic: str, count: int) -> int:
    return zlib.crc32(topic.encode()) % count


class Cluster:
    def __init__(self, brokers: Iterable[BrokerNode], coordinator_partitions: int,
                 coordinator_replication: int) -> None:
        self.brokers: dict[int, BrokerNode] = {b.node_id: b for b in brokers}
        if not self.brokers:
            raise ClusterError("a cluster needs at least one broker")
        self.ids = sorted(self.brokers)
        self.replication: dict[str, int] = {}
        """Each data topic's replication factor (1 unless created with another)."""
        self.partitions: dict[tuple[str, int], PartitionState] = {}
        rf = max(1, min(coordinator_replication, len(self.ids)))
        self.coordinators = [
            CoordinatorPartition(index, replicas[0], 0, replicas)
            for index in range(coordinator_partitions)
            for replicas in (self._placed(index, rf),)]
        self.moves = 0
        """Leadership changes so far (partitions and coordinator partitions)."""

    # --- brokers --------------------------------------------------------------------------
    def broker(self, node_id: int) -> BrokerNode:
        found = self.brokers.get(node_id)
        if found is None:
            raise ClusterError(f"unknown broker {node_id}: the brokers are "
                               f"{', '.join(map(str, self.ids))}")
        return found

    def running(self, node_id: int) -> bool:
        broker = self.brokers.get(node_id)
        return broker is not None and broker.running

    def running_ids(self) -> list[int]:
        return [node for node in self.ids if self.brokers[node].running]

    @property
    def controller_id(self) -> int:
        running = self.running_ids()
        return running[0] if running else -1

    def check_replication(self, replication_factor: int) -> None:
        """Kafka's refusal of a replication factor above the registered (running) brokers."""
        registered = len(self.running_ids())
        if replication_factor > registered:
            raise ClusterError(
                f"Unable to replicate the partition {replication_factor} time(s): The target "
                f"replication factor of {replication_factor} cannot be reached because only "
                f"{registered} broker(s) are registered.")

    # --- placement ------------------------------------------------------------------------
    def _placed(self, first: int, replication: int) -> tuple[int, ...]:
        ids = self.ids
        return tuple(ids[(first + j) % len(ids)] for j in range(min(replication, len(ids))))

    def set_replication(self, topic: str, replication_factor: int) -> None:
        self.replication[topic] = replication_factor

    def forget_topic(self, topic: str) -> None:
        self.replication.pop(topic, None)
        for key in [key for key in self.partitions if key[0] == topic]:
            del self.partitions[key]

    def assign(self, topic: str, index: int, replicas: tuple[int, ...]) -> PartitionState:
        """A partition placed on ``replicas`` (a manual assignment): led by the first running
        one."""
        state = self.partitions[(topic, index)] = PartitionState(
            self._leader_among(replicas), 0, self._with_leader(replicas, None))
        return state

    def partition(self, topic: str, index: int) -> PartitionState:
        """The partition's state, placed now if it is asked for the first time."""
        key = (topic, index)
        state = self.partitions.get(key)
        if state is None:
            replicas = self._placed(_start(topic, len(self.ids)) + index,
                                    self.replication.get(topic, 1))
            state = self.partitions[key] = PartitionState(self._leader_among(replicas), 0,
                                                          self._with_leader(replicas, None))
        return state

    def _leader_among(self, replicas: tuple[int, ...]) -> int:
        for node in replicas:
            if self.running(node):
                return node
        return self._least_loaded()

    def _with_leader(self, replicas: tuple[int, ...], leader: int | None) -> tuple[int, ...]:
        """The replica list with ``leader`` in it (first live replica if None): a leader
        outside the replicas takes the place of the last one, so the factor stays."""
        leader = self._leader_among(replicas) if leader is None else leader
        if leader in replicas:
            return replicas
        return (leader, *(node for node in replicas if node != leader))[:max(1, len(replicas))]

    def _least_loaded(self, excluding: int | None = None) -> int:
        running = [node for node in self.running_ids() if node != excluding]
        if not running:
            raise ClusterError("no running broker to lead the partition")
        load = dict.fromkeys(running, 0)
        for state in self.partitions.values():
            if state.leader in load:
                load[state.leader] += 1
        for coordinator in self.coordinators:
            if coordinator.leader in load:
                load[coordinator.leader] += 1
        return min(running, key=lambda node: (load[node], node))

    def coordinator(self, index: int) -> CoordinatorPartition:
        return self.coordinators[index]

    def internal_partition(self, index: int) -> CoordinatorPartition:
        """The coordinator partition behind partition ``index`` of an internal topic
        (``__transaction_state``'s transactional ids live on the same partitions)."""
        return self.coordinators[index % len(self.coordinators)]

    # --- what a broker leads ----------------------------------------------------------------
    def led_by(self, node_id: int) -> list[tuple[str, int]]:
        return sorted(key for key, state in self.partitions.items() if state.leader == node_id)

    def coordinators_led_by(self, node_id: int) -> list[int]:
        return [c.index for c in self.coordinators if c.leader == node_id]

    # --- moves ----------------------------------------------------------------------------
    def _check_target(self, node_id: int) -> None:
        if not self.broker(node_id).running:
            raise ClusterError(f"broker {node_id} is stopped")

    def move_partition(self, topic: str, index: int, to: int, log_end_offset: int,
                       reason: str = "moved") -> Move | None:
        """Make ``to`` the partition's leader (None if it already is): a new leader epoch,
        starting at ``log_end_offset``."""
        self._check_target(to)
        state = self.partition(topic, index)
        if state.leader == to:
            return None
        previous = state.leader
        state.leader = to
        state.leader_epoch += 1
        state.epoch_starts.append((state.leader_epoch, log_end_offset))
        state.replicas = self._with_leader(state.replicas, to)
        self.moves += 1
        return Move(PARTITION_LEADER, topic, index, previous, to, state.leader_epoch, reason)

    def move_coordinator(self, index: int, to: int, loading_until: float = 0.0,
                         reason: str = "moved", topic: str = "__consumer_offsets"
                         ) -> Move | None:
        """Make ``to`` the coordinator partition's leader (None if it already is), loading
        until ``loading_until``."""
        self._check_target(to)
        partition = self.coordinators[index]
        if partition.leader == to:
            return None
        previous = partition.leader
        partition.leader = to
        partition.leader_epoch += 1
        partition.loading_until = loading_until
        partition.replicas = self._with_leader(partition.replicas, to)
        self.moves += 1
        return Move(COORDINATOR, topic, index, previous, to, partition.leader_epoch, reason)

    def stop(self, node_id: int, log_end_offset: Callable[[str, int], int],
             loading_until: float = 0.0) -> list[Move]:
        """Stop a broker: what it leads moves to a running replica (else the least loaded
        running broker). Refused for the last running broker."""
        broker = self.broker(node_id)
        if not broker.running:
            return []
        if self.running_ids() == [node_id]:
            raise ClusterError(f"broker {node_id} is the last running broker: stopping it "
                               "would leave the cluster without one")
        broker.running = False
        moves: list[Move] = []
        for (topic, index), state in sorted(self.partitions.items()):
            if state.leader == node_id:
                to = self._successor(state.replicas, node_id)
                move = self.move_partition(topic, index, to, log_end_offset(topic, index),
                                           reason=f"broker {node_id} stopped")
                if move is not None:
                    moves.append(move)
        for partition in self.coordinators:
            if partition.leader == node_id:
                to = self._successor(partition.replicas, node_id)
                move = self.move_coordinator(partition.index, to, loading_until,
                                             reason=f"broker {node_id} stopped")
                if move is not None:
                    moves.append(move)
        return moves

    def _successor(self, replicas: tuple[int, ...], leaving: int) -> int:
        for node in replicas:
            if node != leaving and self.running(node):
                return node
        return self._least_loaded(excluding=leaving)

    def start(self, node_id: int) -> bool:
        """Start a stopped broker (False if it was running). It leads nothing until a move
        makes it a leader, as a restarted Kafka broker before a preferred leader election."""
        broker = self.broker(node_id)
        if broker.running:
            return False
        broker.running = True
        return True

    # --- persistence (``state_file.py``) ----------------------------------------------------
    def to_json(self) -> dict[str, Any]:
        return {
            "replication": dict(sorted(self.replication.items())),
            "partitions": [
                {"topic": topic, "partition": index, "leader": s.leader,
                 "leader_epoch": s.leader_epoch, "replicas": list(s.replicas),
                 "epoch_starts": [list(item) for item in s.epoch_starts]}
                for (topic, index), s in sorted(self.partitions.items())],
            "coordinators": [
                {"partition": c.index, "leader": c.leader, "leader_epoch": c.leader_epoch,
                 "replicas": list(c.replicas)} for c in self.coordinators],
        }

    def restore(self, saved: dict[str, Any]) -> None:
        """What ``to_json`` saved, kept where it still fits this cluster (its brokers, its
        coordinator partitions): leader epochs never go back across a restart."""
        known = set(self.ids)
        self.replication.update({str(k): int(v) for k, v in saved.get("replication", {}).items()})
        for item in saved.get("partitions", []):
            replicas = tuple(int(n) for n in item["replicas"] if int(n) in known)
            leader = int(item["leader"])
            if leader not in known or not replicas:
                continue
            self.partitions[(str(item["topic"]), int(item["partition"]))] = PartitionState(
                leader, int(item["leader_epoch"]), replicas,
                [(int(e), int(o)) for e, o in item["epoch_starts"]])
        for item in saved.get("coordinators", []):
            index, leader = int(item["partition"]), int(item["leader"])
            if index < len(self.coordinators) and leader in known:
                replicas = tuple(int(n) for n in item["replicas"] if int(n) in known)
                self.coordinators[index] = CoordinatorPartition(
                    index, leader, int(item["leader_epoch"]), replicas or (leader,))
