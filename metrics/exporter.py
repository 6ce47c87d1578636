"""The Prometheus HTTP exporter, served from a background thread."""

from __future__ import annotations

from urllib.parse import urlsplit

from prometheus_client import REGISTRY, CollectorRegistry, start_http_server


def start_exporter(url: str, registry: CollectorRegistry = REGISTRY) -> tuple[str, int]:
    """Serve ``registry`` at ``url`` (``http://host:port``); returns the bound host and port."""
    parts = urlsplit(url)
    host = parts.hostname or "127.0.0.1"
    server, _thread = start_http_server(parts.port or 0, addr=host, registry=registry)
    return host, int(server.server_address[1])
