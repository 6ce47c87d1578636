"""The control endpoint's routes: JSON in, JSON out.

| route | what |
| --- | --- |
| ``GET /health`` | ``{"status": "ok", "faults": N}`` |
| ``POST /faults`` | add a rule (``faults.FaultRule.parse``): 201 ``{"id": N, "rule": {}}`` |
| ``GET /faults`` | the active rules, with their remaining counts and seconds |
| ``DELETE /faults``, ``DELETE /faults/<id>`` | remove every rule, or one |
| ``POST /groups/<group>/rebalance`` | force a new target assignment (``rebalance.py``) |
| ``GET /groups/<group>/held`` | a consumer group's held partitions (deferred resolution) |
| ``GET /timeline?group=G`` | the rebalance timeline (``coordinator.observability.timeline``) |
| ``GET /clients[?group=G]`` | clients pushing telemetry, their latest metrics (``telemetry``) |
| ``GET /brokers`` | each broker: id, state, listener, rack, what it leads (``brokers.py``) |
| ``POST /brokers/<id>/stop``, ``start`` | stop a broker (its leaderships move), start it |
| ``POST /brokers/<id>/delay`` | ``{"delay_ms": n, "seconds": s}``: its answers late |
| ``POST /brokers/<id>/disconnect`` | drop every connection of the broker |
| ``POST /groups/<group>/coordinator`` | ``{"broker": id, "load_ms": n}``: move it |
| ``POST /partitions/<topic>/<p>/leader`` | ``{"broker": id}``: move the leader |

The ``/brokers``, ``/coordinator`` and ``/leader`` routes need ``cluster.brokers`` > 1 (400
otherwise, and for an unknown broker or stopping the last running one).

The web pages (``GET /``, ``GET /groups/<group>/timeline.html``, ...) are ``pages.py``'s routes,
which the HTTP server adds after these.

Errors are ``{"error": "..."}`` with 400 (bad JSON, a rule refused), 404 (no such route, rule,
group or member), 405 (another method) or 503 (the event loop did not answer in time). Handlers
marked ``on_loop`` run on the event loop (they touch coordinator state); the others run on the
HTTP server's thread.
"""

from __future__ import annotations

import asyncio
import importlib
import json
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from coordinator import telemetry
from coordinator.observability.logs import get_logger

from . import brokers, rebalance
from .faults import FREEZE, FaultInjector, FaultRule, FaultSpecError

log = get_logger("coordinator.control")

LOOP_TIMEOUT_S = 30.0

Answer = tuple[int, Any]
Query = Mapping[str, Sequence[str]]


@dataclass(frozen=True, slots=True)
class Request:
    method: str
    path: str
    query: Query
    body: bytes
    params: tuple[str, ...] = ()

    def json(self) -> Any:
        """The body as JSON; ``BadRequest`` if it is not."""
        if not self.body.strip():
            raise BadRequest("expected a JSON body")
        try:
            return json.loads(self.body)
        except (ValueError, UnicodeDecodeError) as exc:
            raise BadRequest(f"the body is not JSON: {exc}") from None


class BadRequest(Exception):
    """Answered 400 with the message."""


class Control:
    """What the routes work on: the app (its runtime, its timeline), the fault rules, and the
    event loop that owns them."""

    def __init__(self, app: Any, faults: FaultInjector,
                 loop: asyncio.AbstractEventLoop | None = None) -> None:
        self.app = app
        self.faults = faults
        self.loop = loop

    def on_loop(self, work: Callable[[], Awaitable[Answer]]) -> Answer:
        """Run ``work()`` on the event loop and wait for its answer (from the HTTP thread)."""
        loop = self.loop
        if loop is None or loop.is_closed():
            return 503, {"error": "the server is not running"}

        async def run() -> Answer:
            return await work()

        future = asyncio.run_coroutine_threadsafe(run(), loop)
        try:
            return future.result(LOOP_TIMEOUT_S)
        except TimeoutError:
            future.cancel()
            return 503, {"error": f"the event loop did not answer within {LOOP_TIMEOUT_S} s"}


# --- handlers -------------------------------------------------------------------------------------
def health(control: Control, request: Request) -> Answer:
    return 200, {"status": "ok", "faults": len(control.faults.rules())}


def add_fault(control: Control, request: Request) -> Answer:
    try:
        rule = FaultRule.parse(request.json())
    except FaultSpecError as exc:
        raise BadRequest(str(exc)) from None

    async def add() -> Answer:
        if rule.kind == FREEZE:
            assert rule.group is not None and rule.member is not None
            present = rebalance.member_present(control.app.runtime, rule.group, rule.member)
            if present is False:
                return 404, {"error": f"{rule.member} is not a member of group {rule.group}"}
        added = control.faults.add(rule)
        return 201, {"id": added.id, "rule": added.to_json()}

    return control.on_loop(add)


def list_faults(control: Control, request: Request) -> Answer:
    async def rules() -> Answer:
        return 200, {"faults": [rule.to_json() for rule in control.faults.rules()]}

    return control.on_loop(rules)


def clear_faults(control: Control, request: Request) -> Answer:
    async def clear() -> Answer:
        return 200, {"deleted": control.faults.clear()}

    return control.on_loop(clear)


def delete_fault(control: Control, request: Request) -> Answer:
    rule_id = int(request.params[0])

    async def delete() -> Answer:
        if control.faults.remove(rule_id) is None:
            return 404, {"error": f"no fault rule {rule_id}"}
        return 200, {"deleted": 1, "id": rule_id}

    return control.on_loop(delete)


def force_rebalance(control: Control, request: Request) -> Answer:
    group = request.params[0]
    return control.on_loop(lambda: rebalance.force_rebalance(control.app.runtime, group))


def held(control: Control, request: Request) -> Answer:
    group = request.params[0]
    return control.on_loop(lambda: rebalance.held_partitions(control.app.runtime, group))


def timeline(control: Control, request: Request) -> Answer:
    """``coordinator.observability.timeline.http_timeline``, if this build has it."""
    try:
        module = importlib.import_module("coordinator.observability.timeline")
    except ImportError:
        module = None
    handler = getattr(module, "http_timeline", None)
    if handler is None:
        return 404, {"error": "timeline not available"}
    status, body = handler(control.app, request.query)
    return int(status), body


def clients(control: Control, request: Request) -> Answer:
    values = request.query.get("group")
    group = values[0] if values else None

    async def read() -> Answer:
        return 200, {"clients": telemetry.of(control.app.broker).clients(group)}

    return control.on_loop(read)


# --- the cluster (cluster.brokers > 1: ``brokers.py``) ------------------------------------------
def _on_cluster(control: Control, work: Callable[[Any], Awaitable[Answer]]) -> Answer:
    """``work(cluster)`` on the event loop; a refused move is a 400."""
    async def run() -> Answer:
        try:
            return await work(brokers.cluster_of(control.app))
        except brokers.ClusterRequestError as exc:
            raise BadRequest(str(exc)) from None

    return control.on_loop(run)


def _body(request: Request) -> dict[str, Any]:
    """The JSON object of the body (an empty body is ``{}``)."""
    if not request.body.strip():
        return {}
    body = request.json()
    if not isinstance(body, dict):
        raise BadRequest("the body must be a JSON object")
    return body


def _milliseconds(body: Mapping[str, Any], name: str, default: float = 0) -> float:
    value = body.get(name, default)
    if isinstance(value, bool) or not isinstance(value, int | float) or value < 0:
        raise BadRequest(f"{name} must be a number >= 0, not {value!r}")
    return value


def _broker_in(body: Mapping[str, Any]) -> Any:
    if "broker" not in body:
        raise BadRequest('expected {"broker": <broker id>}')
    return body["broker"]


def list_brokers(control: Control, request: Request) -> Answer:
    async def work(cluster: Any) -> Answer:
        return 200, {"brokers": brokers.describe(control.app, cluster),
                     "controller": cluster.controller_id}

    return _on_cluster(control, work)


def stop_broker(control: Control, request: Request) -> Answer:
    load_ms = _milliseconds(_body(request), "load_ms")

    async def work(cluster: Any) -> Answer:
        return await brokers.stop_broker(control.app, brokers.node_of(cluster, request.params[0]),
                                         int(load_ms))

    return _on_cluster(control, work)


def start_broker(control: Control, request: Request) -> Answer:
    async def work(cluster: Any) -> Answer:
        return await brokers.start_broker(control.app,
                                          brokers.node_of(cluster, request.params[0]))

    return _on_cluster(control, work)


def disconnect_broker(control: Control, request: Request) -> Answer:
    async def work(cluster: Any) -> Answer:
        return await brokers.disconnect_broker(control.app,
                                               brokers.node_of(cluster, request.params[0]))

    return _on_cluster(control, work)


def delay_broker(control: Control, request: Request) -> Answer:
    body = _body(request)
    if "delay_ms" not in body:
        raise BadRequest('expected {"delay_ms": n, "seconds": s}')
    delay_ms = _milliseconds(body, "delay_ms")
    seconds = _milliseconds(body, "seconds", 3600.0)

    async def work(cluster: Any) -> Answer:
        return await brokers.delay_broker(control.app,
                                          brokers.node_of(cluster, request.params[0]),
                                          int(delay_ms), float(seconds))

    return _on_cluster(control, work)


def move_coordinator(control: Control, request: Request) -> Answer:
    body = _body(request)
    target = _broker_in(body)
    load_ms = _milliseconds(body, "load_ms")

    async def work(cluster: Any) -> Answer:
        return await brokers.move_coordinator(control.app, request.params[0],
                                              brokers.node_of(cluster, target), int(load_ms))

    return _on_cluster(control, work)


def move_leader(control: Control, request: Request) -> Answer:
    target = _broker_in(_body(request))
    topic, index = request.params
    if not index.isdigit():
        raise BadRequest(f"partition must be a partition index, not {index!r}")

    async def work(cluster: Any) -> Answer:
        return await brokers.move_leader(control.app, topic, int(index),
                                         brokers.node_of(cluster, target))

    return _on_cluster(control, work)


Handler = Callable[[Control, Request], Answer]

ROUTES: tuple[tuple[str, re.Pattern[str], Handler], ...] = (
    ("GET", re.compile(r"/health"), health),
    ("POST", re.compile(r"/faults"), add_fault),
    ("GET", re.compile(r"/faults"), list_faults),
    ("DELETE", re.compile(r"/faults"), clear_faults),
    ("DELETE", re.compile(r"/faults/(\d+)"), delete_fault),
    ("POST", re.compile(r"/groups/([^/]+)/rebalance"), force_rebalance),
    ("GET", re.compile(r"/groups/([^/]+)/held"), held),
    ("GET", re.compile(r"/timeline"), timeline),
    ("GET", re.compile(r"/clients"), clients),
    ("GET", re.compile(r"/brokers"), list_brokers),
    ("POST", re.compile(r"/brokers/([^/]+)/stop"), stop_broker),
    ("POST", re.compile(r"/brokers/([^/]+)/start"), start_broker),
    ("POST", re.compile(r"/brokers/([^/]+)/delay"), delay_broker),
    ("POST", re.compile(r"/brokers/([^/]+)/disconnect"), disconnect_broker),
    ("POST", re.compile(r"/groups/([^/]+)/coordinator"), move_coordinator),
    ("POST", re.compile(r"/partitions/([^/]+)/([^/]+)/leader"), move_leader),
)


def route(control: Control, method: str, path: str, query: Query, body: bytes,
          unquote: Callable[[str], str] = lambda text: text,
          routes: Sequence[tuple[str, re.Pattern[str], Handler]] = ROUTES) -> Answer:
    """The answer to one HTTP request (``path`` without its query; ``unquote`` decodes the
    path's parameters) by the first of ``routes`` that matches."""
    path = path.rstrip("/") or "/"
    allowed = []
    for route_method, pattern, handler in routes:
        found = pattern.fullmatch(path)
        if found is None:
            continue
        if route_method != method:
            allowed.append(route_method)
            continue
        request = Request(method, path, query, body,
                          tuple(unquote(group) for group in found.groups()))
        try:
            return handler(control, request)
        except BadRequest as exc:
            return 400, {"error": str(exc)}
        except Exception as exc:  # a bug of ours: the client gets a 500, the log the trace
            log.exception("control request failed", method=method, path=path)
            return 500, {"error": f"internal error: {exc}"}
    if allowed:
        return 405, {"error": f"{method} is not allowed on {path}; use "
                              f"{', '.join(sorted(set(allowed)))}", "allow": sorted(set(allowed))}
    return 404, {"error": f"no route {method} {path}",
                 "routes": [f"{m} {p.pattern}" for m, p, _ in routes]}
