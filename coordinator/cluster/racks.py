"""The racks of a topic's partitions, as the rack-aware server-side assignors take them (Kafka's
``SubscribedTopicDescriber.racksForPartition``): the racks of the brokers holding a replica of
each partition. One broker with ``broker.rack`` holds every partition in its rack; without any
broker rack there is no rack data (None), and the assignors ignore racks."""

from __future__ import annotations

from collections.abc import Callable

from .model import Cluster

PartitionRacks = Callable[[str, int], "tuple[tuple[str, ...], ...] | None"]
"""``(topic, partition count) ->`` each partition's racks (sorted), or None: no rack data."""


def partition_racks(cluster: Cluster | None, rack: str | None) -> PartitionRacks | None:
    """The racks lookup of a broker (``cluster`` None: one broker in ``rack``); None when no
    broker has a rack, so groups pay nothing for it."""
    if cluster is None:
        if rack is None:
            return None
        one = (rack,)
        return lambda topic, count: (one,) * count
    if all(node.rack is None for node in cluster.brokers.values()):
        return None

    def racks(topic: str, count: int) -> tuple[tuple[str, ...], ...] | None:
        out = []
        for index in range(count):
            replicas = cluster.partition(topic, index).replicas
            out.append(tuple(sorted({rack for rack in (cluster.brokers[node].rack
                                                        for node in replicas
                                                        if node in cluster.brokers)
                                     if rack is not None})))
        return tuple(out)

    return racks
