"""Config parsing: Kafka's names, types, bounds and messages; properties files; exit codes."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from coordinator.cli import load_config
from coordinator.config import BROKER_CONFIGS, TOPIC_CONFIGS, ConfigError, ServerConfig
from coordinator.config.definitions import BROKER_CONFIGS_BY_NAME, TOPIC_CONFIGS_BY_NAME
from coordinator.config.properties import parse_properties
from tests.harness import ServerProcess

ROOT = Path(__file__).resolve().parents[2]


def config(**values: str) -> ServerConfig:
    return ServerConfig.from_sources({k.replace("_", "."): v for k, v in values.items()})


def error_of(values: dict[str, str]) -> str:
    with pytest.raises(ConfigError) as info:
        ServerConfig.from_sources(values)
    return str(info.value)


# --- defaults ---------------------------------------------------------------------------------
def test_defaults_are_kafkas() -> None:
    defaults = ServerConfig.from_sources({})
    expected = {
        "node.id": 1,
        "listeners": ["PLAINTEXT://127.0.0.1:9092"],
        "socket.request.max.bytes": 104857600,
        "auto.create.topics.enable": True,
        "num.partitions": 1,
        "log.dirs": ["./data"],
        "metrics.listener": "http://127.0.0.1:9404",
        "group.consumer.session.timeout.ms": 45000,
        "group.consumer.heartbeat.interval.ms": 5000,
        "group.consumer.min.session.timeout.ms": 45000,
        "group.consumer.max.session.timeout.ms": 60000,
        "group.consumer.assignors": ["uniform", "range"],
        "group.consumer.migration.policy": "bidirectional",
        "group.min.session.timeout.ms": 6000,
        "group.max.session.timeout.ms": 1800000,
        "group.initial.rebalance.delay.ms": 3000,
        "offsets.retention.minutes": 10080,
        "offsets.topic.num.partitions": 50,
        "offsets.commit.timeout.ms": 5000,
        "offset.metadata.max.bytes": 4096,
        "group.share.max.size": 200,
        "group.share.delivery.count.limit": 5,
        "broker.rack": None,
    }
    assert {key: defaults[key] for key in expected} == expected
    assert defaults.explicit == frozenset() and defaults.unknown == {}


def test_every_definition_parses_its_own_rendered_default() -> None:
    for definition in (*BROKER_CONFIGS, *TOPIC_CONFIGS):
        rendered = definition.render(definition.default)
        if rendered is None:
            continue
        assert definition.parse(rendered) == definition.default, definition.name


def test_names_are_unique() -> None:
    assert len(BROKER_CONFIGS_BY_NAME) == len(BROKER_CONFIGS)
    assert len(TOPIC_CONFIGS_BY_NAME) == len(TOPIC_CONFIGS)


# --- one value at a time ----------------------------------------------------------------------
@pytest.mark.parametrize(("values", "message"), [
    ({"group.consumer.heartbeat.interval.ms": "-1"},
     "Invalid value -1 for configuration group.consumer.heartbeat.interval.ms: "
     "Value must be at least 1"),
    ({"node.id": "abc"}, "Invalid value abc for configuration node.id: Not a number of type INT"),
    ({"node.id": "2147483648"},
     "Invalid value 2147483648 for configuration node.id: Not a number of type INT"),
    ({"node.id": "1.5"}, "Invalid value 1.5 for configuration node.id: Not a number of type INT"),
    ({"offsets.topic.replication.factor": "40000"},
     "Invalid value 40000 for configuration offsets.topic.replication.factor: "
     "Not a number of type SHORT"),
    ({"connections.max.idle.ms": "soon"},
     "Invalid value soon for configuration connections.max.idle.ms: Not a number of type LONG"),
    ({"auto.create.topics.enable": "yes"},
     "Invalid value yes for configuration auto.create.topics.enable: "
     "Expected value to be either true or false"),
    ({"group.consumer.migration.policy": "sideways"},
     "Invalid value sideways for configuration group.consumer.migration.policy: "
     "String must be one of: disabled, downgrade, upgrade, bidirectional"),
    ({"group.coordinator.rebalance.protocols": "classic,gossip"},
     "Invalid value gossip for configuration group.coordinator.rebalance.protocols: "
     "String must be one of: classic, consumer, share, streams"),
    ({"group.share.delivery.count.limit": "11"},
     "Invalid value 11 for configuration group.share.delivery.count.limit: "
     "Value must be no more than 10"),
    ({"group.share.max.size": "9"},
     "Invalid value 9 for configuration group.share.max.size: Value must be at least 10"),
    ({"num.partitions": "0"},
     "Invalid value 0 for configuration num.partitions: Value must be at least 1"),
    ({"socket.request.max.bytes": "0"},
     "Invalid value 0 for configuration socket.request.max.bytes: Value must be at least 1"),
    ({"group.consumer.regex.refresh.interval.ms": "9999"},
     "Invalid value 9999 for configuration group.consumer.regex.refresh.interval.ms: "
     "Value must be at least 10000"),
])
def test_bad_values_get_kafkas_message(values: dict[str, str], message: str) -> None:
    assert error_of(values) == message


def test_values_are_typed_and_trimmed() -> None:
    parsed = config(node_id=" 7 ", auto_create_topics_enable="FALSE", num_partitions="3")
    assert parsed["node.id"] == 7
    assert parsed["auto.create.topics.enable"] is False
    assert parsed["num.partitions"] == 3
    listed = ServerConfig.from_sources({"group.consumer.assignors": " range , uniform "})
    assert listed["group.consumer.assignors"] == ["range", "uniform"]
    assert ServerConfig.from_sources({"broker.rack": "r1"})["broker.rack"] == "r1"


def test_topic_config_bounds() -> None:
    ratio = TOPIC_CONFIGS_BY_NAME["min.cleanable.dirty.ratio"]
    assert ratio.parse("0.25") == 0.25
    with pytest.raises(ConfigError, match=r"Value must be no more than 1$"):
        ratio.parse("1.5")
    with pytest.raises(ConfigError, match=r"Not a number of type DOUBLE"):
        ratio.parse("half")
    policy = TOPIC_CONFIGS_BY_NAME["cleanup.policy"]
    assert policy.parse("compact,delete") == ["compact", "delete"]
    with pytest.raises(ConfigError, match=r"String must be one of: delete, compact"):
        policy.parse("shred")
    assert TOPIC_CONFIGS_BY_NAME["retention.ms"].parse("-1") == -1
    with pytest.raises(ConfigError, match=r"Value must be at least -1"):
        TOPIC_CONFIGS_BY_NAME["retention.ms"].parse("-2")


# --- several values together ------------------------------------------------------------------
@pytest.mark.parametrize(("values", "message"), [
    ({"group.consumer.heartbeat.interval.ms": "4000"},
     "Invalid value 4000 for configuration group.consumer.heartbeat.interval.ms: "
     "Value must be at least group.consumer.min.heartbeat.interval.ms (5000)"),
    ({"group.consumer.session.timeout.ms": "70000"},
     "Invalid value 70000 for configuration group.consumer.session.timeout.ms: "
     "Value must be no more than group.consumer.max.session.timeout.ms (60000)"),
    ({"group.consumer.heartbeat.interval.ms": "50000",
      "group.consumer.max.heartbeat.interval.ms": "60000"},
     "Invalid value 50000 for configuration group.consumer.heartbeat.interval.ms: "
     "group.consumer.heartbeat.interval.ms must be less than "
     "group.consumer.session.timeout.ms"),
    ({"group.share.heartbeat.interval.ms": "45000",
      "group.share.max.heartbeat.interval.ms": "45000"},
     "Invalid value 45000 for configuration group.share.heartbeat.interval.ms: "
     "group.share.heartbeat.interval.ms must be less than group.share.session.timeout.ms"),
    ({"group.min.session.timeout.ms": "7000", "group.max.session.timeout.ms": "6000"},
     "Invalid value 7000 for configuration group.min.session.timeout.ms: "
     "must be no more than group.max.session.timeout.ms"),
    ({"log.dirs": "/a,/b"},
     "Invalid value /a,/b for configuration log.dirs: Exactly one log directory is supported"),
    ({"listeners": ""},
     "Invalid value  for configuration listeners: At least one listener is required"),
    ({"listeners": "localhost"},
     "Invalid value localhost for configuration listeners: "
     "Unable to parse listener: expected NAME://host:port"),
    ({"metrics.listener": "tcp://127.0.0.1:1"},
     "Invalid value tcp://127.0.0.1:1 for configuration metrics.listener: "
     "Expected http://host:port or an empty string"),
])
def test_cross_field_bounds(values: dict[str, str], message: str) -> None:
    assert error_of(values) == message


def test_cross_field_bounds_accept_a_consistent_set() -> None:
    parsed = ServerConfig.from_sources({
        "group.consumer.min.session.timeout.ms": "1000",
        "group.consumer.session.timeout.ms": "2000",
        "group.consumer.min.heartbeat.interval.ms": "100",
        "group.consumer.heartbeat.interval.ms": "500",
    })
    assert parsed["group.consumer.session.timeout.ms"] == 2000
    assert parsed["group.consumer.heartbeat.interval.ms"] == 500


def test_unknown_keys_and_explicit_keys() -> None:
    parsed = ServerConfig.from_sources({"num.partitions": "2", "no.such.key": "x",
                                        "zookeeper.connect": "localhost:2181"})
    assert parsed.unknown == {"no.such.key": "x", "zookeeper.connect": "localhost:2181"}
    assert parsed.explicit == frozenset({"num.partitions"})


def test_listeners_and_advertised_listeners() -> None:
    parsed = ServerConfig.from_sources({"listeners": "PLAINTEXT://0.0.0.0:19092",
                                        "advertised.listeners": "plaintext://my-host:29092"})
    [listener] = parsed.listeners
    assert (listener.name, listener.host, listener.port) == ("PLAINTEXT", "0.0.0.0", 19092)
    [advertised] = parsed.advertised_listeners
    assert (advertised.name, advertised.host, advertised.port) == ("PLAINTEXT", "my-host", 29092)
    assert ServerConfig.from_sources({}).advertised_listeners == ServerConfig.from_sources(
        {}).listeners


# --- properties files -------------------------------------------------------------------------
def test_properties_syntax() -> None:
    text = "\n".join([
        "# a comment",
        "! another comment",
        "",
        "   node.id = 3   ",
        "broker.rack: rack-1",
        "log.dirs /var/lib/coordinator",
        "listeners=PLAINTEXT://127.0.0.1:9092,\\",
        "    PLAINTEXT://127.0.0.1:9093",
        "with.equals=a=b:c",
        "empty.value=",
        "key.only",
        "num.partitions=1",
        "num.partitions=4",
    ])
    assert parse_properties(text) == {
        "node.id": "3",
        "broker.rack": "rack-1",
        "log.dirs": "/var/lib/coordinator",
        "listeners": "PLAINTEXT://127.0.0.1:9092,PLAINTEXT://127.0.0.1:9093",
        "with.equals": "a=b:c",
        "empty.value": "",
        "key.only": "",
        "num.partitions": "4",
    }


def test_properties_continuation_at_end_of_file() -> None:
    assert parse_properties("a=1,\\\n2,\\") == {"a": "1,2,"}


def test_file_then_overrides(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text("num.partitions=3\nnode.id=4\n# comment\nbroker.rack=r\n", encoding="utf-8")
    parsed = load_config(str(path), [("num.partitions", "5")])
    assert parsed["num.partitions"] == 5  # the override wins
    assert parsed["node.id"] == 4
    assert parsed["broker.rack"] == "r"
    assert parsed.explicit == frozenset({"num.partitions", "node.id", "broker.rack"})


# --- the command line -------------------------------------------------------------------------
def run_serve(*args: str, timeout: float = 20) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "coordinator", "serve", *args], cwd=ROOT,
                          capture_output=True, text=True, timeout=timeout, check=False)


def test_cli_exit_code_2_on_bad_override(tmp_path: Path) -> None:
    done = run_serve("--override", "group.consumer.heartbeat.interval.ms=-1",
                     "--override", f"log.dirs={tmp_path}", "--override", "metrics.listener=")
    assert done.returncode == 2
    assert ("Invalid value -1 for configuration group.consumer.heartbeat.interval.ms: "
            "Value must be at least 1") in done.stderr


def test_cli_exit_code_2_on_bad_value_in_file(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text("auto.create.topics.enable=maybe\n", encoding="utf-8")
    done = run_serve("--config", str(path))
    assert done.returncode == 2
    assert "Expected value to be either true or false" in done.stderr


def test_cli_exit_code_2_on_missing_file(tmp_path: Path) -> None:
    done = run_serve("--config", str(tmp_path / "nope.properties"))
    assert done.returncode == 2


def test_cli_exit_code_2_on_override_without_equals() -> None:
    done = run_serve("--override", "num.partitions")
    assert done.returncode == 2
    assert "expected key=value" in done.stderr


@pytest.mark.slow
def test_unknown_key_is_a_warning_and_the_server_still_starts(tmp_path: Path) -> None:
    server = ServerProcess(tmp_path / "data", {"no.such.setting": "1"}).start()
    try:
        warning = server.wait_event("unknown configuration key ignored", key="no.such.setting")
        assert warning["level"] == "warning"
        assert server.alive()
    finally:
        assert server.stop() == 0


@pytest.mark.slow
def test_config_file_is_used_by_serve(tmp_path: Path) -> None:
    path = tmp_path / "server.properties"
    path.write_text("node.id=5\nbroker.rack=from-file\n", encoding="utf-8")
    server = ServerProcess(tmp_path / "data", extra_args=["--config", str(path)]).start()
    try:
        started = server.event("started")
        assert started is not None and started["node_id"] == 5
    finally:
        server.stop()
