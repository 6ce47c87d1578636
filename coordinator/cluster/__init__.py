"""Several brokers in one process (issue 35): the pure cluster model (``model.py``: brokers and
their state, partition leaders, replicas, ISR and leader epochs, the coordinator partitions'
leaders, moves) and its persistence across restarts (``state_file.py``)."""

from .model import (
    BrokerNode,
    Cluster,
    ClusterError,
    CoordinatorPartition,
    Endpoint,
    Move,
    PartitionState,
)

__all__ = ["BrokerNode", "Cluster", "ClusterError", "CoordinatorPartition", "Endpoint", "Move",
           "PartitionState"]
