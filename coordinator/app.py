"""Wiring: config -> broker -> dispatcher -> listeners, and an orderly shutdown."""

from __future__ import annotations

import asyncio
import signal
from pathlib import Path

from metrics import start_exporter

from .apis import build_registry
from .broker import Broker
from .clock import SystemClock
from .config import ServerConfig
from .dispatch import Dispatcher
from .logs import get_logger
from .meta_properties import load_or_create
from .metadata_image import MetadataImage
from .metadata_log import MetadataLog
from .server import KafkaServer

log = get_logger("coordinator.app")


class App:
    def __init__(self, config: ServerConfig) -> None:
        self.config = config
        Path(config.log_dir).mkdir(parents=True, exist_ok=True)
        cluster_id = load_or_create(config.log_dir, config["node.id"])
        clock = SystemClock()
        image = MetadataImage()
        self.metadata_log = MetadataLog.open(config.log_dir, image, clock)
        self.broker = Broker(config, cluster_id, image, self.metadata_log, clock)
        self.registry = build_registry()
        self.dispatcher = Dispatcher(self.broker, self.registry)
        self.servers: list[KafkaServer] = []
        self._stopped = asyncio.Event()

    async def start(self) -> None:
        for listener in self.config.listeners:
            server = KafkaServer(self.dispatcher, listener.host, listener.port,
                                 self.config["socket.request.max.bytes"],
                                 self.config["connections.max.idle.ms"])
            port = await server.start()
            self.broker.bound_to(port)
            self.servers.append(server)
            log.info("listening", listener=listener.name, host=listener.host, port=port,
                     advertised_host=self.broker.endpoint.host,
                     advertised_port=self.broker.endpoint.port)
        metrics_url = self.config["metrics.listener"]
        if metrics_url:
            host, port = start_exporter(metrics_url)
            log.info("metrics exporter listening", host=host, port=port)
        log.info("started", node_id=self.broker.node_id, cluster_id=self.broker.cluster_id,
                 log_dir=self.config.log_dir)

    def request_stop(self) -> None:
        self._stopped.set()

    async def run_until_stopped(self) -> None:
        loop = asyncio.get_running_loop()
        for sig in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(sig, self.request_stop)
        await self.start()
        await self._stopped.wait()
        log.info("stopping")
        for server in self.servers:
            await server.stop()
        log.info("stopped")
