"""``Coordinator``: the server as a child process, for tests of Kafka applications.

``Coordinator.start()`` runs ``python -m coordinator serve --profile test`` with its data in a
directory of its own, on free ports (the Kafka listener, the HTTP control endpoint and the
metrics exporter bind port 0 and the server logs what it bound), and returns once the server
accepts clients. ``restart()`` is a crash: SIGKILL, then the same data and the same ports, so
clients reconnect as they would to a broker that came back. ``Coordinator.start(brokers=3)``
is a cluster of three brokers in the one process (``cluster.brokers``), each on a port of its
own, driven through ``brokers`` (``kafka_coordinator.brokers``).
"""

from __future__ import annotations

import shutil
import tempfile
import weakref
from collections.abc import Mapping
from functools import cached_property
from pathlib import Path
from types import TracebackType
from typing import TYPE_CHECKING, Any

from coordinator.testing.server_process import ServerProcess

if TYPE_CHECKING:
    from .brokers import Brokers
    from .clients import ClientMetrics
    from .control import ControlClient
    from .faults import Faults
    from .timeline import Timeline

DEFAULT_PROFILE = "test"
START_TIMEOUT_S = 30.0


class CoordinatorError(RuntimeError):
    """The server did not start, or a feature it was asked for is off."""


def config_value(value: object) -> str:
    """A Python value as a Kafka config string: ``True`` -> ``true``, a list -> ``a,b``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return ""
    if isinstance(value, (list, tuple)):
        return ",".join(config_value(item) for item in value)
    return str(value)


def _reap(server: ServerProcess, owned_dir: Path | None) -> None:
    """At garbage collection or interpreter exit: no server outlives its handle."""
    server.kill()
    if owned_dir is not None:
        shutil.rmtree(owned_dir, ignore_errors=True)


class Coordinator:
    """A running server: ``bootstrap_servers`` for clients, ``faults`` and ``timeline(group)``
    for the test, ``stop()``, ``kill()`` and ``restart()``; a context manager."""

    def __init__(self, data_dir: str | Path | None = None,
                 config: Mapping[str, object] | None = None,
                 profile: str = DEFAULT_PROFILE, log_level: str = "INFO",
                 brokers: int = 1) -> None:
        if int(brokers) < 1:
            raise CoordinatorError(f"brokers must be 1 or more, not {brokers}")
        owned = None
        if data_dir is None:
            owned = Path(tempfile.mkdtemp(prefix="kafka-coordinator-"))
            data_dir = owned / "data"
        self.data_dir = Path(data_dir)
        self.profile = profile
        # no fixed port whatever the profile, unless the config asks for one
        self.config = {"metrics.listener": "http://127.0.0.1:0",
                       **({"cluster.brokers": str(int(brokers))} if int(brokers) > 1 else {}),
                       **{key: config_value(value) for key, value in (config or {}).items()}}
        self._server = ServerProcess(self.data_dir, self.config,
                                     extra_args=["--log-level", log_level], profile=profile)
        self._finalizer = weakref.finalize(self, _reap, self._server, owned)

    @classmethod
    def start(cls, data_dir: str | Path | None = None, config: Mapping[str, object] | None = None,
              profile: str = DEFAULT_PROFILE, timeout: float = START_TIMEOUT_S,
              log_level: str = "INFO", brokers: int = 1) -> Coordinator:
        """Start a server and return when it accepts clients.

        ``data_dir``: where it keeps its store (a temporary directory, removed with the handle,
        if None); ``config``: any server config by Kafka's name, after the profile's values
        (``{"group.consumer.session.timeout.ms": 2000}``); ``profile``: ``test`` (test timings,
        control endpoint on) or ``serve`` (Kafka's defaults); ``brokers``: how many brokers the
        server presents (``cluster.brokers``; node ids 1..N, each on a free port)."""
        coordinator = cls(data_dir, config, profile, log_level, brokers)
        coordinator._run(coordinator._server.start, timeout)
        return coordinator

    def _run(self, start: Any, timeout: float) -> None:
        try:
            start(timeout)
            self._server.wait_loaded(timeout)
        except AssertionError as exc:  # the helper's way of failing; ours is an error
            self._server.kill()
            raise CoordinatorError(f"the coordinator did not start: {exc}\n"
                                   f"{self.output()}") from None

    # --- where it is -------------------------------------------------------------------------
    @property
    def bootstrap_servers(self) -> str:
        """``host:port`` of its Kafka listener, for any client's ``bootstrap.servers``; with
        several brokers, every broker's, comma-separated (a client finds the cluster through
        any broker that is running)."""
        return self._server.bootstrap_servers

    @property
    def broker_count(self) -> int:
        """How many brokers it presents (``cluster.brokers``)."""
        return int(self.config.get("cluster.brokers") or 1)

    @property
    def broker_ports(self) -> dict[int, int]:
        """Each broker's Kafka port, by node id."""
        return self._server.broker_ports()

    @property
    def port(self) -> int:
        return self._server.port

    @property
    def pid(self) -> int | None:
        proc = self._server.proc
        return proc.pid if proc is not None else None

    @property
    def control_url(self) -> str:
        """The HTTP control endpoint (``control.listener``; on in the test profile)."""
        url = self._server.control_url
        if url is None:
            raise CoordinatorError("the control endpoint is off: set control.listener "
                                   "(the test profile has it on)")
        return url

    @property
    def metrics_url(self) -> str | None:
        """The Prometheus exporter's address (``metrics.listener``), if it is on."""
        return self._server.metrics_url

    # --- what a test drives --------------------------------------------------------------------
    @cached_property
    def control(self) -> ControlClient:
        """The control endpoint's client (``kafka_coordinator.control``)."""
        from .control import ControlClient

        return ControlClient(self.control_url)

    @cached_property
    def faults(self) -> Faults:
        """Fault injection (``kafka_coordinator.faults``) through the control endpoint."""
        from .faults import Faults

        return Faults(self.control)

    @cached_property
    def brokers(self) -> Brokers:
        """Its brokers (``kafka_coordinator.brokers``): ``list()``, ``stop(id)``,
        ``start(id)``, ``delay(id, delay_ms, seconds)``, ``move_coordinator(group, id)``,
        ``move_leader(topic, partition, id)``."""
        from .brokers import Brokers

        return Brokers(self.control)

    def move_coordinator(self, group: str, broker: int,
                         load_ms: float | None = None) -> dict[str, Any]:
        """Move ``group``'s coordinator to ``broker`` (``Brokers.move_coordinator``)."""
        return self.brokers.move_coordinator(group, broker, load_ms)

    def move_leader(self, topic: str, partition: int, broker: int) -> dict[str, Any]:
        """Make ``broker`` the leader of ``topic``'s ``partition`` (``Brokers.move_leader``)."""
        return self.brokers.move_leader(topic, partition, broker)

    @cached_property
    def clients(self) -> ClientMetrics:
        """What the clients pushed (KIP-714 telemetry, ``kafka_coordinator.clients``)."""
        from .clients import ClientMetrics

        return ClientMetrics(self.control)

    def timeline(self, group: str) -> Timeline:
        """The rebalance timeline of ``group`` so far (``kafka_coordinator.timeline``)."""
        from . import timeline

        return timeline.Timeline.fetch(self.control_url, group)

    def timeline_url(self, group: str) -> str:
        """The web page of ``group``'s rebalance timeline: one lane per member, what it owned
        over time, following the server live (open it in a browser)."""
        from coordinator.control.page import timeline_path

        return self.control_url + timeline_path(group)

    # --- lifecycle ---------------------------------------------------------------------------
    def alive(self) -> bool:
        return self._server.alive()

    def stop(self, timeout: float = 15.0) -> None:
        """An orderly shutdown (SIGTERM); killed if it takes longer than ``timeout`` s."""
        try:
            self._server.stop(timeout)
        finally:
            self._server.kill()

    def kill(self) -> None:
        """``kill -9``: no shutdown; what it wrote stays in the store."""
        self._server.kill()

    def restart(self, timeout: float = START_TIMEOUT_S) -> Coordinator:
        """Crash and come back: SIGKILL, then start again with the same data on the same ports
        (every broker's Kafka listener, the control endpoint, the metrics exporter)."""
        self._run(self._server.restart, timeout)
        return self

    def close(self) -> None:
        """Stop it, and remove its data if the directory was its own."""
        self.stop()
        self._finalizer()

    def __enter__(self) -> Coordinator:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()

    # --- what it said --------------------------------------------------------------------------
    def output(self) -> str:
        """Its log since the last (re)start: one JSON object per line."""
        return self._server.output()

    def events(self, name: str | None = None) -> list[dict[str, Any]]:
        """Its log since the last (re)start as dicts; only the events called ``name`` if given."""
        return [dict(event) for event in self._server.events_of(name)]

    def __repr__(self) -> str:
        state = "running" if self.alive() else "stopped"
        return f"<Coordinator {self.bootstrap_servers} profile={self.profile} {state}>"
