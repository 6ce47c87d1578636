"""README.md's "Testing your application" runs as written.

Every fenced block in the section (its subsections too) whose first line is ``# example: <name>``
is a test: a ``python`` block is a complete test file, run as a pytest project of its own
(pytester, in a subprocess: no conftest of ours, the plugin comes through its entry point); a
``sh`` block runs against a running server with ``$CONTROL_URL`` set, with curl where there is
one and otherwise as the same requests through urllib. The test profile's table is checked
against ``coordinator/config/profiles.py``.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import shutil
import subprocess
import urllib.request
from functools import cache
from pathlib import Path

import pytest

from coordinator.config.definitions import BROKER_CONFIGS_BY_NAME
from coordinator.config.profiles import TEST_PROFILE
from kafka_coordinator import Coordinator
from tests.docs.test_readme import section, table

SECTION = "Testing your application"
EXAMPLE = re.compile(r"^```(\w+)\n# example: ([\w-]+)\n(.*?)^```\n", re.MULTILINE | re.DOTALL)
SLOW = {"confluent-kafka-consumer-protocol-frozen-member"}
"""Examples that take longer than 5 s (they wait for a session to expire)."""
NO_HYPOTHESIS = ("-p", "no:hypothesispytest")
"""The example projects' pytest runs without Hypothesis's plugin (installed with our dev extra,
not a user's): importing it costs each run ~0.3 s of CPU, and no example uses it."""


@cache
def examples() -> dict[str, tuple[str, str]]:
    """name -> (language, the block's text)."""
    found: dict[str, tuple[str, str]] = {}
    for language, name, body in EXAMPLE.findall(section(SECTION)):
        assert name not in found, f"two README examples are called {name}"
        found[name] = (language, f"# example: {name}\n{body}")
    return found


def _python_examples() -> list[object]:
    return [pytest.param(name, marks=[pytest.mark.slow] if name in SLOW else [])
            for name, (language, _) in examples().items() if language == "python"]


def test_the_examples_cover_every_client_and_fault() -> None:
    python = [text for language, text in examples().values() if language == "python"]
    shell = [text for language, text in examples().values() if language == "sh"]

    def some(*needles: str, exclude: str | None = None) -> bool:
        return any(all(needle in text for needle in needles)
                   and (exclude is None or exclude not in text) for text in python)

    assert some("from confluent_kafka import", '"group.protocol": "consumer"')
    assert some("from confluent_kafka import", exclude='"group.protocol": "consumer"')
    assert some("from kafka import")
    assert some("from aiokafka import")
    assert some("restart")  # a coordinator failover
    assert some("faults.freeze_member(")
    assert some("faults.error(", '"REBALANCE_IN_PROGRESS"')
    # a cluster's failovers (issue 35): a coordinator move and a broker loss with each client,
    # a share consumer through a leader move
    for client in ("from confluent_kafka import", "from kafka import", "from aiokafka import"):
        assert some("kafka_coordinator(brokers=3)", client, "brokers.stop"), client
    assert some("kafka_coordinator(brokers=3)", '"group.protocol": protocol',
                "move_coordinator(")
    assert some("kafka_coordinator(brokers=3)", "ShareConsumer", "move_leader(")
    assert any("curl " in text and "$CONTROL_URL" in text for text in shell)
    assert {name for name in SLOW} <= examples().keys()


@pytest.mark.slow
@pytest.mark.parametrize("name", _python_examples())
def test_python_example(pytester: pytest.Pytester, name: str) -> None:
    _, text = examples()[name]
    pytester.makepyfile(**{f"test_{name.replace('-', '_')}": text})
    result = pytester.runpytest_subprocess("-p", "no:cacheprovider", *NO_HYPOTHESIS, "-q",
                                           timeout=180)
    outcomes = result.parseoutcomes()
    assert outcomes.get("passed", 0) >= 1, result.stdout.str()
    assert not (outcomes.get("failed") or outcomes.get("errors")), result.stdout.str()


# --- the shell examples: curl, or the same requests through urllib ------------------------------

def curl_commands(script: str, env: dict[str, str]) -> list[list[str]]:
    """The curl commands of a shell block (continued lines joined, variables expanded)."""
    commands = []
    for line in script.replace("\\\n", " ").splitlines():
        words = shlex.split(line, comments=True)
        if words and words[0] == "curl":
            commands.append([_expand(word, env) for word in words[1:]])
    return commands


def _expand(word: str, env: dict[str, str]) -> str:
    return re.sub(r"\$\{?(\w+)\}?", lambda m: env.get(m.group(1), m.group(0)), word)


def urllib_curl(arguments: list[str]) -> str:
    """What ``curl arguments`` would print, through urllib (-s, -f, -X, -H, -d, a URL)."""
    method, data, headers, url = None, None, {}, None
    words = iter(arguments)
    for word in words:
        if word in ("-s", "--silent", "-f", "--fail", "-sf", "-fs", "--show-error", "-S"):
            continue
        if word in ("-X", "--request"):
            method = next(words)
        elif word in ("-H", "--header"):
            key, _, value = next(words).partition(":")
            headers[key.strip()] = value.strip()
        elif word in ("-d", "--data", "--data-raw", "--json"):
            data = next(words).encode()
            if word == "--json":
                headers.setdefault("Content-Type", "application/json")
        elif word.startswith("-"):
            raise AssertionError(f"the urllib stand-in for curl does not know {word}")
        else:
            url = word
    assert url is not None, arguments
    request = urllib.request.Request(url, data=data, headers=headers,
                                     method=method or ("POST" if data is not None else "GET"))
    with urllib.request.urlopen(request, timeout=10) as response:
        return response.read().decode()


def shell_examples() -> list[str]:
    return [name for name, (language, _) in examples().items() if language == "sh"]


@pytest.mark.slow
@pytest.mark.parametrize("name", shell_examples())
@pytest.mark.parametrize("runner", ["curl", "urllib"])
def test_shell_example(tmp_path: Path, name: str, runner: str) -> None:
    if runner == "curl" and shutil.which("curl") is None:
        pytest.skip("no curl here: the urllib run covers the example")
    _, script = examples()[name]
    with Coordinator.start(data_dir=tmp_path / "data") as server:
        env = {**os.environ, "CONTROL_URL": server.control_url,
               "BOOTSTRAP_SERVERS": server.bootstrap_servers}
        if runner == "curl":
            result = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], env=env,
                                    capture_output=True, text=True, timeout=60, check=False)
            assert result.returncode == 0, result.stderr
            output = result.stdout
        else:
            output = "\n".join(urllib_curl(command) for command in curl_commands(script, env))
        answers = [json.loads(line) for line in output.splitlines() if line.strip()]
        assert len(answers) == len(curl_commands(script, env))  # one JSON answer each
        # the rules the example added are on the server
        kinds = re.findall(r'"kind": "(\w+)"', script)
        assert kinds and sorted(rule["kind"] for rule in server.faults.list()) == sorted(kinds)


# --- the profile table ------------------------------------------------------------------------

def _values(cell: str) -> list[str]:
    return re.findall(r"`([^`]*)`", cell) or [cell.strip()]


def test_the_profile_table_is_the_test_profile() -> None:
    rows = table(section(SECTION), ("key", "serve", "test"))
    seen: dict[str, str] = {}
    for keys_cell, serve_cell, test_cell in rows:
        keys, serve, test = _values(keys_cell), _values(serve_cell), _values(test_cell)
        assert len(keys) == len(test), keys_cell
        serve = serve * len(keys) if len(serve) == 1 else serve
        for key, default, value in zip(keys, serve, test, strict=True):
            definition = BROKER_CONFIGS_BY_NAME[key]
            rendered = definition.render(definition.default)
            assert (default == "off" and not rendered) or default == rendered, key
            assert definition.render(definition.parse(TEST_PROFILE[key])) == value, key
            seen[key] = value
    assert sorted(seen) == sorted(TEST_PROFILE)
