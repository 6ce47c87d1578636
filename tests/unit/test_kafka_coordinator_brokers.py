"""``kafka_coordinator.brokers`` speaks the control endpoint's cluster routes (issue 35's fixed
interface): each call is the request the route table expects, its JSON answer is returned, and a
refusal is a ``ControlError`` with the server's status and reason. The endpoint here is a small
HTTP server on a free port that answers as the routes do and records what it was sent."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from kafka_coordinator import Coordinator
from kafka_coordinator.brokers import Brokers
from kafka_coordinator.control import ControlClient, ControlError

BROKERS = [{"id": 1, "state": "running", "listener": "127.0.0.1:9092", "rack": None,
            "partitions": 4, "coordinator_partitions": 17},
           {"id": 2, "state": "stopped", "listener": "127.0.0.1:9093", "rack": "b",
            "partitions": 0, "coordinator_partitions": 0},
           {"id": 3, "state": "running", "listener": "127.0.0.1:9094", "rack": None,
            "partitions": 2, "coordinator_partitions": 16}]


class Endpoint(ThreadingHTTPServer):
    daemon_threads = True

    def __init__(self) -> None:
        super().__init__(("127.0.0.1", 0), Handler)
        self.seen: list[tuple[str, str, Any]] = []

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}"


class Handler(BaseHTTPRequestHandler):
    server: Endpoint

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_GET(self) -> None:
        self._serve("GET")

    def do_POST(self) -> None:
        self._serve("POST")

    def _serve(self, method: str) -> None:
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        body = json.loads(raw) if raw else None
        self.server.seen.append((method, self.path, body))
        status, answer = self._answer(method, self.path, body)
        data = json.dumps(answer).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    @staticmethod
    def _answer(method: str, path: str, body: Any) -> tuple[int, Any]:
        if method == "GET" and path == "/brokers":
            return 200, {"brokers": BROKERS}
        parts = path.strip("/").split("/")
        if parts[0] == "brokers" and parts[1] not in ("1", "2", "3"):
            return 404, {"error": f"no broker {parts[1]}"}
        if parts[0] == "brokers" and parts[2] == "stop" and parts[1] == "1":
            return 400, {"error": "broker 1 is the last running broker"}
        return 200, {"path": path, "body": body}


@pytest.fixture
def endpoint() -> Iterator[Endpoint]:
    server = Endpoint()
    thread = threading.Thread(target=server.serve_forever, args=(0.02,), daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def test_listing_the_brokers(endpoint: Endpoint) -> None:
    brokers = Brokers(endpoint.url)
    assert brokers.list() == BROKERS
    assert brokers.get(3)["listener"] == "127.0.0.1:9094"
    with pytest.raises(KeyError):
        brokers.get(4)
    assert brokers.ids() == [1, 2, 3]
    assert brokers.running() == [1, 3]
    assert brokers.ids("stopped") == [2]
    assert all(seen == ("GET", "/brokers", None) for seen in endpoint.seen)


def test_each_call_is_its_routes_request(endpoint: Endpoint) -> None:
    brokers = Brokers(ControlClient(endpoint.url))
    assert brokers.stop(2) == {"path": "/brokers/2/stop", "body": {}}
    brokers.start(2)
    brokers.stop(3, load_ms=200)
    brokers.disconnect(1)
    brokers.delay(3, 250, seconds=5)
    brokers.delay(3, 0)
    brokers.move_coordinator("orders", 2)
    brokers.move_coordinator("orders", 3, load_ms=400)
    brokers.move_leader("payments", 1, 3)
    assert endpoint.seen == [
        ("POST", "/brokers/2/stop", {}),
        ("POST", "/brokers/2/start", {}),
        ("POST", "/brokers/3/stop", {"load_ms": 200}),
        ("POST", "/brokers/1/disconnect", {}),
        ("POST", "/brokers/3/delay", {"delay_ms": 250, "seconds": 5}),
        ("POST", "/brokers/3/delay", {"delay_ms": 0}),
        ("POST", "/groups/orders/coordinator", {"broker": 2}),
        ("POST", "/groups/orders/coordinator", {"broker": 3, "load_ms": 400}),
        ("POST", "/partitions/payments/1/leader", {"broker": 3}),
    ]


def test_each_request_is_one_the_servers_route_table_serves(endpoint: Endpoint) -> None:
    from coordinator.control.routes import ROUTES

    brokers = Brokers(endpoint.url)
    brokers.list()
    brokers.stop(2, load_ms=10)
    brokers.start(2)
    brokers.delay(2, 5)
    brokers.disconnect(2)
    brokers.move_coordinator("a/b", 3)
    brokers.move_leader("t/u", 0, 1)
    for method, path, _ in endpoint.seen:
        assert any(method == route_method and pattern.fullmatch(path)
                   for route_method, pattern, _ in ROUTES), (method, path)


def test_names_are_one_path_segment_each(endpoint: Endpoint) -> None:
    brokers = Brokers(endpoint.url)
    brokers.move_coordinator("team/orders v2", 1)
    brokers.move_leader("a/b", 0, 2)
    assert [path for _, path, _ in endpoint.seen] == [
        "/groups/team%2Forders%20v2/coordinator", "/partitions/a%2Fb/0/leader"]


def test_a_refusal_is_a_control_error_with_the_servers_reason(endpoint: Endpoint) -> None:
    brokers = Brokers(endpoint.url)
    with pytest.raises(ControlError) as unknown:
        brokers.stop(7)
    assert unknown.value.status == 404 and unknown.value.message == "no broker 7"
    with pytest.raises(ControlError) as last:
        brokers.stop(1)
    assert last.value.status == 400 and "last running broker" in last.value.message


def test_the_coordinator_handle_builds_a_cluster_config() -> None:
    single = Coordinator()
    assert "cluster.brokers" not in single.config and single.broker_count == 1
    three = Coordinator(brokers=3, config={"num.partitions": 6})
    assert three.config["cluster.brokers"] == "3" and three.broker_count == 3
    with pytest.raises(Exception, match="brokers must be 1 or more"):
        Coordinator(brokers=0)


def test_the_fixtures_brokers_option_is_checked() -> None:
    from kafka_coordinator.pytest_plugin import _checked

    assert _checked({"brokers": 3}, "marker") == {"brokers": 3}
    for bad in (0, -1, "3", True, 2.5):
        with pytest.raises(pytest.UsageError, match="brokers must be a whole number"):
            _checked({"brokers": bad}, "marker")
