"""What every API handler may read: this node, its config, the cluster id, the metadata image."""

from __future__ import annotations

from coordinator.cluster.model import Cluster, Endpoint
from coordinator.config import ServerConfig
from coordinator.runtime import CoordinatorRuntime
from coordinator.runtime.clock import Clock, SystemClock
from coordinator.security.authorizer import StandardAuthorizer
from coordinator.security.credentials import ScramCredentials

from .image import MetadataImage
from .internal_topics import InternalTopics
from .log import MetadataLog

__all__ = ["Broker", "Endpoint"]


class Broker:
    """This node. With ``cluster.brokers`` 1 it is the only broker: the leader of every
    partition and every group's coordinator. With more, ``cluster`` says who leads what (the
    brokers share this object: a request's ``RequestContext.node_id`` says which broker it
    reached)."""

    def __init__(self, config: ServerConfig, cluster_id: str, image: MetadataImage,
                 metadata_log: MetadataLog, runtime: CoordinatorRuntime,
                 clock: Clock | None = None, authorizer: StandardAuthorizer | None = None,
                 scram_credentials: ScramCredentials | None = None) -> None:
        self.config = config
        self.metadata_log = metadata_log
        self.runtime = runtime
        self.node_id: int = config["node.id"]
        self.rack: str | None = config["broker.rack"]
        self.cluster_id = cluster_id
        self.image = image
        self.clock = clock or SystemClock()
        self.authorizer = authorizer
        self.scram_credentials = (ScramCredentials() if scram_credentials is None
                                  else scram_credentials)
        """Every user's SCRAM credentials (replayed from ``__cluster_metadata-0``)."""
        """Kafka's ACLs when ``authorizer.class.name`` is set; None: everything is allowed."""
        self.endpoints: dict[str, Endpoint] = {
            advertised.name: Endpoint(advertised.host or "127.0.0.1", advertised.port)
            for advertised in config.advertised_listeners}
        """What each listener advertises (by listener name): Metadata and FindCoordinator answer
        a client with the endpoint of the listener it connected on, as Kafka does."""
        self.endpoint = next(iter(self.endpoints.values()))
        """The first listener's endpoint."""
        self.internal_topics = InternalTopics(image, metadata_log, cluster_id,
                                              config["offsets.topic.num.partitions"],
                                              config["offsets.topic.segment.bytes"])
        """Kafka's internal topics, created on first use."""
        self.cluster: Cluster | None = None
        """The brokers and their leaders with ``cluster.brokers`` > 1 (None: this node alone)."""

    def bound_to(self, port: int, listener: str | None = None) -> None:
        """Called once a listener is bound: port 0 in the config means "the one we got"."""
        endpoint = self.endpoints.get(listener, self.endpoint) if listener else self.endpoint
        if endpoint.port == 0:
            endpoint.port = port

    def endpoint_for(self, listener: str) -> Endpoint:
        """The endpoint advertised to a client connected on ``listener``."""
        return self.endpoints.get(listener, self.endpoint)

    def endpoint_of(self, node_id: int, listener: str) -> Endpoint:
        """The endpoint broker ``node_id`` advertises to a client connected on ``listener``."""
        cluster = self.cluster
        if cluster is None or node_id == self.node_id:
            return self.endpoint_for(listener)
        endpoints = cluster.broker(node_id).endpoints
        found = endpoints.get(listener)
        return found if found is not None else next(iter(endpoints.values()))
