"""What every API handler may read: this node, its config, the cluster id, the metadata image."""

from __future__ import annotations

from dataclasses import dataclass

from coordinator.config import ServerConfig
from coordinator.runtime import CoordinatorRuntime
from coordinator.runtime.clock import Clock, SystemClock

from .image import MetadataImage
from .log import MetadataLog


@dataclass(slots=True)
class Endpoint:
    host: str
    port: int


class Broker:
    """The single node of this cluster: it is the leader of every partition and every group's
    coordinator."""

    def __init__(self, config: ServerConfig, cluster_id: str, image: MetadataImage,
                 metadata_log: MetadataLog, runtime: CoordinatorRuntime,
                 clock: Clock | None = None) -> None:
        self.config = config
        self.metadata_log = metadata_log
        self.runtime = runtime
        self.node_id: int = config["node.id"]
        self.rack: str | None = config["broker.rack"]
        self.cluster_id = cluster_id
        self.image = image
        self.clock = clock or SystemClock()
        advertised = config.advertised_listeners[0]
        self.endpoint = Endpoint(advertised.host or "127.0.0.1", advertised.port)

    def bound_to(self, port: int) -> None:
        """Called once the listener is bound: port 0 in the config means "the one we got"."""
        if self.endpoint.port == 0:
            self.endpoint.port = port
