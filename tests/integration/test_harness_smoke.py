from tests.harness import ServerProcess


def test_server_starts_and_logs_its_port(server: ServerProcess) -> None:
    started = server.event("started")
    assert started is not None and started["node_id"] == 1
    assert server.port > 0
