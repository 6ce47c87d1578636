"""``Coordinator``: the server as a child process, for tests of Kafka applications.

``Coordinator.start()`` runs ``python -m coordinator serve --profile test`` with its data in a
directory of its own, on free ports (the Kafka listener, the HTTP control endpoint and the
metrics exporter bind port 0 and the server logs what it bound), and returns once the server
accepts clients. ``restart()`` is a crash: SIGKILL, then the same data and the same ports, so
clients reconnect as they would to a broker that came back.
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
                 profile: str = DEFAULT_PROFILE, log_level: str = "INFO") -> None:
        owned = None
        if data_dir is None:
            owned = Path(tempfile.mkdtemp(prefix="kafka-coordinator-"))
            data_dir = owned / "data"
        self.data_dir = Path(data_dir)
        self.profile = profile
        # no fixed port whatever the profile, unless the config asks for one
        self.config = {"metrics.listener": "http://127.0.0.1:0",
                       **{key: config_value(value) for key, value in (config or {}).items()}}
        self._server = ServerProcess(self.data_dir, self.config,
                                     extra_args=["--log-level", log_level], profile=profile)
        self._finalizer = weakref.finalize(self, _reap, self._server, owned)

    @classmethod
    def start(cls, data_dir: str | Path | None = None, config: Mapping[str, object] | None = None,
              profile: str = DEFAULT_PROFILE, timeout: float = START_TIMEOUT_S,
              log_level: str = "INFO") -> Coordinator:
        """Start a server and return when it accepts clients.

        ``data_dir``: where it keeps its store (a temporary directory, removed with the handle,
        if None); ``config``: any server config by Kafka's name, after the profile's values
        (``{"group.consumer.session.timeout.ms": 2000}``); ``profile``: ``test`` (test timings,
        control endpoint on) or ``serve`` (Kafka's defaults)."""
        coordinator = cls(data_dir, config, profile, log_level)
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
        """``host:port`` of its Kafka listener, for any client's ``bootstrap.servers``."""
        return self._server.bootstrap

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
        (the Kafka listener, the control endpoint, the metrics exporter)."""
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
