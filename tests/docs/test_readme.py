"""README.md checked against the code.

"What it serves" lists exactly the APIs and version ranges the registry (so ApiVersions)
advertises, and its resource-type notes say what the config APIs really answer. The config
table under "Running it" names real keys with their real defaults, every other backticked
config key in the README exists, and the README's example of a bad value is what the server
really says.
"""

from __future__ import annotations

import re
import socket
import struct
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from kio.schema.api_versions.v0.request import ApiVersionsRequest
from kio.schema.describe_configs.v1.request import DescribeConfigsRequest, DescribeConfigsResource
from kio.schema.incremental_alter_configs.v0.request import (
    AlterConfigsResource,
    IncrementalAlterConfigsRequest,
)

import protocol
from coordinator.apis import build_registry
from coordinator.config import ConfigDef, ConfigError, ServerConfig
from coordinator.config.cluster import broker_specs
from coordinator.config.definitions import BROKER_CONFIGS_BY_NAME, TOPIC_CONFIGS_BY_NAME
from coordinator.groups.common.group_configs import GROUP_CONFIG_NAMES
from coordinator.groups.common.group_configs import definition as group_config
from protocol import ErrorCode
from protocol.legacy import LEGACY_APIS
from tests.harness import ServerProcess

ROOT = Path(__file__).resolve().parents[2]
README = ROOT / "README.md"


def readme_text() -> str:
    return README.read_text()


def section(heading: str) -> str:
    """The text under ``## heading``, up to the next ``## `` heading."""
    match = re.search(rf"^## {re.escape(heading)}\n(.*?)(?=^## |\Z)", readme_text(),
                      re.MULTILINE | re.DOTALL)
    assert match, f"README.md has no '## {heading}' section"
    return match.group(1)


def cells(line: str) -> list[str]:
    return [cell.strip() for cell in line.strip().strip("|").split("|")]


def table(text: str, header: tuple[str, ...]) -> list[list[str]]:
    """The body rows of the first markdown table in ``text`` with this header row."""
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if line.startswith("|") and cells(line) == list(header):
            assert set(cells(lines[i + 1])) == {"---"}, lines[i + 1]
            rows = []
            for row in lines[i + 2:]:
                if not row.startswith("|"):
                    break
                rows.append(cells(row))
                assert len(rows[-1]) == len(header), row
            assert rows, f"the {header} table is empty"
            return rows
    raise AssertionError(f"no table with header {header}")


# --- What it serves ----------------------------------------------------------------------------

EN_DASH = "\N{EN DASH}"
# one version ("0") or a range with an en dash ("2\N{EN DASH}10"), then an optional "(note)"
VERSIONS = re.compile(rf"(\d+)(?:{EN_DASH}(\d+))?(?: \(([^()]+)\))?")


def served_in_readme() -> dict[str, tuple[int, int, str | None]]:
    """README API name -> (min version, max version, the note in parentheses)."""
    served: dict[str, tuple[int, int, str | None]] = {}
    for name, versions in table(section("What it serves"), ("API", "versions")):
        match = VERSIONS.fullmatch(versions)
        assert match, f"{name}: cannot read the versions {versions!r}"
        low = int(match[1])
        high = int(match[2]) if match[2] else low
        assert low <= high, f"{name}: {versions}"
        assert name not in served, f"{name} is listed twice"
        served[name] = (low, high, match[3])
    return served


def normalised(name: str) -> str:
    return name.replace("_", "").lower()


def kafka_name(key_name: str) -> str:
    """``CONSUMER_GROUP_HEARTBEAT`` -> ``ConsumerGroupHeartbeat``."""
    return "".join(word.capitalize() for word in key_name.split("_"))


def test_what_it_serves_is_exactly_what_the_registry_advertises() -> None:
    served = build_registry()
    registry = {normalised(spec.key.name): (served.oldest(spec), spec.max_version)
                for spec in served.specs()}
    readme = {normalised(name): (low, high) for name, (low, high, _) in served_in_readme().items()}
    assert sorted(registry.keys() - readme.keys()) == [], "served but missing from the README"
    assert sorted(readme.keys() - registry.keys()) == [], "in the README but not served"
    assert readme == registry


def test_the_removed_versions_served_are_named_with_their_ranges() -> None:
    text = " ".join(section("What it serves").split())
    for legacy in LEGACY_APIS.values():
        name = kafka_name(protocol.ApiKey(legacy.api_key).name)
        last = legacy.base - 1
        versions = str(last) if last == legacy.oldest else f"{legacy.oldest}{EN_DASH}{last}"
        assert f"{name} {versions}" in text, f"{name} {versions}"
    assert "legacy.request.versions.enable=false" in text


def test_what_it_serves_uses_kafkas_api_names() -> None:
    names = {kafka_name(spec.key.name) for spec in build_registry().specs()}
    assert set(served_in_readme()) == names


# Kafka's ConfigResource.Type codes.
RESOURCE_TYPES = {2: "TOPIC", 4: "BROKER", 8: "BROKER_LOGGER", 16: "CLIENT_METRICS", 32: "GROUP"}
RESOURCE_NAMES = {2: "readme-topic", 4: "1", 8: "1", 16: "readme-metrics", 32: "readme-group"}


def resource_types_in_note(api: str) -> set[str]:
    note = served_in_readme()[api][2]
    assert note is not None, f"{api} has no note naming its resource types"
    return set(note.split(", "))


def wire_request(server: ServerProcess, body: Any) -> Any:
    host, port = server.bootstrap.rsplit(":", 1)
    with socket.create_connection((host, int(port)), timeout=10) as sock:
        sock.sendall(protocol.encode_request(body, 7, "readme-test"))
        stream = sock.makefile("rb")
        (size,) = struct.unpack(">i", stream.read(4))
        found = protocol.schema(int(body.__api_key__), int(body.__version__))
        correlation_id, response = protocol.decode_response(found, stream.read(size))
    assert correlation_id == 7
    return response


def answered(errors: dict[int, ErrorCode]) -> set[str]:
    """The resource types not refused as unsupported (INVALID_REQUEST); a topic that does not
    exist is still an answer."""
    return {RESOURCE_TYPES[t] for t, error in errors.items() if error != ErrorCode.invalid_request}


def test_apiversions_on_the_wire_matches_the_table(shared_server: ServerProcess) -> None:
    response = wire_request(shared_server, protocol.make(ApiVersionsRequest))
    assert response.error_code == ErrorCode.none
    advertised = {int(k.api_key): (int(k.min_version), int(k.max_version))
                  for k in response.api_keys}
    by_name = {normalised(n): (low, high) for n, (low, high, _) in served_in_readme().items()}
    assert {normalised(protocol.ApiKey(k).name): r for k, r in advertised.items()} == by_name


def test_describe_configs_note_names_the_resource_types_it_answers(
        shared_server: ServerProcess) -> None:
    resources = tuple(protocol.make(DescribeConfigsResource, resource_type=t,
                                    resource_name=RESOURCE_NAMES[t], configuration_keys=None)
                      for t in RESOURCE_TYPES)
    response = wire_request(shared_server, protocol.make(DescribeConfigsRequest,
                                                         resources=resources))
    errors = {int(r.resource_type): r.error_code for r in response.results}
    assert errors.keys() == RESOURCE_TYPES.keys()
    assert answered(errors) == resource_types_in_note("DescribeConfigs")


def test_incremental_alter_configs_note_names_the_resource_types_it_answers(
        shared_server: ServerProcess) -> None:
    resources = tuple(protocol.make(AlterConfigsResource, resource_type=t,
                                    resource_name=RESOURCE_NAMES[t], configs=())
                      for t in RESOURCE_TYPES)
    response = wire_request(shared_server, protocol.make(
        IncrementalAlterConfigsRequest, resources=resources, validate_only=True))
    errors = {int(r.resource_type): r.error_code for r in response.responses}
    assert errors.keys() == RESOURCE_TYPES.keys()
    assert answered(errors) == resource_types_in_note("IncrementalAlterConfigs")


# --- the config table and every config key named ---------------------------------------------

DEFINITIONS: dict[str, ConfigDef] = {
    **TOPIC_CONFIGS_BY_NAME, **BROKER_CONFIGS_BY_NAME,
    # per-group configs (IncrementalAlterConfigs on the GROUP resource), e.g.
    # share.record.lock.duration.ms
    **{name: group_config(name) for name in GROUP_CONFIG_NAMES},
}


def _advertised_listeners_default_to_the_listener() -> bool:
    config = ServerConfig.from_sources({})
    return (config["advertised.listeners"] is None
            and config.advertised_listeners == config.listeners)


def _cluster_brokers(**values: str) -> list[Any]:
    return broker_specs(ServerConfig.from_sources({"cluster.brokers": "3", **values}))


# Defaults the table gives in words: key -> (the words, a check that they are true).
PROSE_DEFAULTS: dict[str, tuple[str, Callable[[], bool]]] = {
    "advertised.listeners": ("the listener", _advertised_listeners_default_to_the_listener),
    "cluster.listeners": ("free ports", lambda: [
        spec.listeners[0].port for spec in _cluster_brokers()][1:] == [0, 0]),
    "cluster.advertised.listeners": ("what they listen on", lambda: all(
        spec.advertised == spec.listeners for spec in _cluster_brokers())),
    "cluster.racks": ("broker 1's broker.rack, no other", lambda: [
        spec.rack for spec in _cluster_brokers(**{"broker.rack": "r"})] == ["r", None, None]),
}

# Backticked key-like names in the README that are not the server's configs, and why.
NOT_SERVER_CONFIGS = {
    "group.instance.id": "a consumer's config (static membership)",
    "group.protocol": "a consumer's config (`group.protocol=consumer`)",
    "gc.freeze": "Python's gc.freeze(), not a config",
    "transactional.id": "a producer's config (transactions)",
    "transaction.timeout.ms": "a producer's config (transactions)",
    "isolation.level": "a consumer's config (`read_committed`)",
    "max.poll.records": "a share consumer's config (ShareFetch MaxRecords)",
    "fetch.max.bytes": "a consumer's config (ShareFetch MaxBytes)",
    "interval.ms": "a CLIENT_METRICS subscription's config (KIP-714)",
    "org.apache.kafka.consumer.coordinator.assigned.partitions": "a client metric (KIP-714)",
}
FILE_SUFFIXES = {"properties", "html", "md", "json", "yml", "yaml", "toml", "py", "txt", "zip"}
CONFIG_KEY = re.compile(r"[a-z][a-z0-9]*(?:\.[a-z0-9]+)+")
ALTERNATIVES = re.compile(r"(.*\.)([a-z0-9]+)/([a-z0-9]+)(\..*)")  # group.min/max.session...


def config_table() -> list[tuple[str, str, bool]]:
    """(key, README default, whether the default is given in words) per key in the table."""
    rows = []
    for keys_cell, default_cell, _ in table(section("Running it"), ("key", "default", "")):
        keys = re.findall(r"`([^`]+)`", keys_cell)
        assert keys_cell == ", ".join(f"`{key}`" for key in keys), keys_cell
        defaults = re.findall(r"`([^`]+)`", default_cell)
        if not defaults:  # in words, for one key
            assert len(keys) == 1, keys_cell
            rows.append((keys[0], default_cell, True))
            continue
        assert default_cell == ", ".join(f"`{value}`" for value in defaults), default_cell
        assert len(defaults) == len(keys), f"{keys_cell} | {default_cell}"
        rows += [(key, value, False) for key, value in zip(keys, defaults, strict=True)]
    return rows


def test_config_table_keys_exist_with_the_stated_defaults() -> None:
    rows = config_table()
    for key, default, in_words in rows:
        assert key in BROKER_CONFIGS_BY_NAME, f"{key} is not a server config"
        definition = BROKER_CONFIGS_BY_NAME[key]
        if in_words:
            assert key in PROSE_DEFAULTS, f"{key}: say what {default!r} means in PROSE_DEFAULTS"
            words, holds = PROSE_DEFAULTS[key]
            assert default == words, key
            assert holds(), f"{key}: the default is not {words!r}"
        else:
            assert definition.render(definition.default) == default, key
    assert {key for key, _, in_words in rows if in_words} == set(PROSE_DEFAULTS)


def prose() -> str:
    """The README without its fenced code blocks, lines joined."""
    text = re.sub(r"^```.*?^```", "", readme_text(), flags=re.MULTILINE | re.DOTALL)
    return " ".join(text.split())


def named_config_keys() -> set[str]:
    """Every backticked string that looks like a Kafka config key (not a file name)."""
    keys = set()
    for span in re.findall(r"`([^`]+)`", prose()):
        name = span.split("=", 1)[0]
        alternatives = ALTERNATIVES.fullmatch(name)
        candidates = ([alternatives[1] + alternatives[i] + alternatives[4] for i in (2, 3)]
                      if alternatives else [name])
        keys |= {c for c in candidates
                 if CONFIG_KEY.fullmatch(c) and c.rsplit(".", 1)[1] not in FILE_SUFFIXES}
    return keys


def test_every_config_key_the_readme_names_exists() -> None:
    named = named_config_keys()
    assert {"group.min.session.timeout.ms", "group.max.session.timeout.ms"} <= named
    unknown = sorted(named - DEFINITIONS.keys() - NOT_SERVER_CONFIGS.keys())
    assert unknown == [], "config keys in README.md that we do not define"
    assert NOT_SERVER_CONFIGS.keys() <= named, "stale NOT_SERVER_CONFIGS entries"
    assert not NOT_SERVER_CONFIGS.keys() & DEFINITIONS.keys()


def test_defaults_stated_in_the_text_are_the_defaults() -> None:
    stated = re.findall(r"`([a-z][a-z0-9.]+)`[^`]{0,20}?\bdefault `([^`]+)`", prose())
    assert stated, "expected e.g. '`group.consumer.assignors`, default `uniform,range`'"
    for key, value in stated:
        definition = DEFINITIONS[key]
        assert definition.render(definition.default) == value, key


def test_the_bad_value_example_is_what_the_server_says(tmp_path: Path) -> None:
    match = re.search(r"`(Invalid value (\S+) for configuration ([a-z0-9.]+): [^`]+)`", prose())
    assert match, "README.md's example of a bad value is gone"
    message, value, key = match.groups()
    try:
        BROKER_CONFIGS_BY_NAME[key].parse(value)
    except ConfigError as exc:
        assert str(exc) == message
    else:
        raise AssertionError(f"{key}={value} is accepted")
    # "A bad value stops the server with exit code 2 and Kafka's message"
    result = subprocess.run(
        [sys.executable, "-m", "coordinator", "serve", "--override", f"{key}={value}",
         "--override", "listeners=PLAINTEXT://127.0.0.1:0", "--override", "metrics.listener=",
         "--override", f"log.dirs={tmp_path / 'data'}"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 2, result.stderr
    assert message in result.stderr
