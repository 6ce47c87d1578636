"""Which requests a broker of the cluster refuses because another broker coordinates what they
name: a group's request at a broker that is not the leader of the group's coordinator
partition gets NOT_COORDINATOR, at the new leader while it loads the partition
COORDINATOR_LOAD_IN_PROGRESS (Kafka's ``GroupCoordinator``); a transactional id's likewise
(``TransactionCoordinator``). The data plane (Produce, Fetch, ListOffsets, ShareFetch,
ShareAcknowledge, OffsetForLeaderEpoch: sent to each partition's leader) is checked per
partition by its handlers (``leader_error``)."""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from protocol import ErrorCode

from .model import Cluster

GROUP_APIS = frozenset({
    8,   # OffsetCommit
    9,   # OffsetFetch
    11,  # JoinGroup
    12,  # Heartbeat
    13,  # LeaveGroup
    14,  # SyncGroup
    15,  # DescribeGroups
    28,  # TxnOffsetCommit (the group's coordinator)
    42,  # DeleteGroups
    47,  # OffsetDelete
    68,  # ConsumerGroupHeartbeat
    69,  # ConsumerGroupDescribe
    76,  # ShareGroupHeartbeat
    77,  # ShareGroupDescribe
    88,  # StreamsGroupHeartbeat
    89,  # StreamsGroupDescribe
    90,  # DescribeShareGroupOffsets
    91,  # AlterShareGroupOffsets
    92,  # DeleteShareGroupOffsets
    8480,  # ConsumerGroupPrepareAssignment (the KIP-848 draft's, when served)
    8481,  # ConsumerGroupInstallAssignment
})
TRANSACTION_APIS = frozenset({
    22,  # InitProducerId (with a transactional id)
    24,  # AddPartitionsToTxn
    25,  # AddOffsetsToTxn
    26,  # EndTxn
    65,  # DescribeTransactions
})


def transactional_ids(body: Any) -> list[str]:
    """The transactional ids a transaction request names."""
    found: list[str] = []
    txn_id = getattr(body, "transactional_id", None)
    if isinstance(txn_id, str):
        found.append(txn_id)
    for item in getattr(body, "transactions", None) or ():  # AddPartitionsToTxn v4+
        inner = getattr(item, "transactional_id", None)
        if isinstance(inner, str):
            found.append(inner)
    found.extend(item for item in getattr(body, "transactional_ids", None) or ()
                 if isinstance(item, str))
    return found


HEARTBEAT = 12


def coordinator_error(cluster: Cluster, node_id: int, partitions: Iterable[int],
                      now: float, api_key: int = -1) -> ErrorCode | None:
    """NOT_COORDINATOR unless ``node_id`` leads every one of the coordinator ``partitions``;
    while one of them is loading, what :func:`loading_answer` says; None: served here."""
    loading = False
    for index in partitions:
        partition = cluster.coordinators[index]
        if partition.leader != node_id:
            return ErrorCode.not_coordinator
        if partition.loading_until > now:
            loading = True
    return loading_answer(api_key) if loading else None


def loading_answer(api_key: int) -> ErrorCode:
    """What a request for a group whose coordinator partition is loading gets:
    COORDINATOR_LOAD_IN_PROGRESS, but a classic Heartbeat NONE, as Kafka's
    GroupCoordinatorService answers it ("the group is still loading, so blindly respond"): the
    member keeps its generation, and its next heartbeat after the load is checked as usual.
    Clients such as aiokafka take COORDINATOR_LOAD_IN_PROGRESS on a heartbeat as fatal."""
    return ErrorCode.none if api_key == HEARTBEAT else ErrorCode.coordinator_load_in_progress


def leader_error(cluster: Cluster, node_id: int, topic: str, partition: int,
                 current_leader_epoch: int = -1) -> ErrorCode | None:
    """A data partition's request at ``node_id``: NOT_LEADER_OR_FOLLOWER unless it leads it;
    with a current leader epoch (-1: none), FENCED_LEADER_EPOCH when the client's is older,
    UNKNOWN_LEADER_EPOCH when it is newer (Kafka's ``Partition.checkCurrentLeaderEpoch``)."""
    state = cluster.partition(topic, partition)
    if state.leader != node_id:
        return ErrorCode.not_leader_or_follower
    if current_leader_epoch >= 0:
        if current_leader_epoch < state.leader_epoch:
            return ErrorCode.fenced_leader_epoch
        if current_leader_epoch > state.leader_epoch:
            return ErrorCode.unknown_leader_epoch
    return None
