"""Every config key the server defines, given a wrong-typed value and an out-of-range one, stops
``serve`` before it runs with exit code 2 and Kafka's message (``Invalid value V for
configuration K: ...``), never a traceback.

The walk goes through ``coordinator.cli.prepare``, what ``serve`` runs before it starts anything
(in-process, so it is fast); two real ``serve`` processes prove the exit code. Numbers,
booleans and enums get their bad values from their definitions; the keys that hold a listener,
a URL, a path, a principal, a key store or a JAAS config have theirs below, with the listener
they need to be read at all (TLS keys on an SSL listener, JAAS on a SASL one). A key added to
the definitions without an entry here fails ``test_every_key_has_bad_values``.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
from collections.abc import Iterator
from functools import cache
from pathlib import Path

import pytest
import trustme
from cryptography.hazmat.primitives import serialization

from coordinator.cli import build_parser, prepare
from coordinator.config import ConfigType
from coordinator.config.definitions import BROKER_CONFIGS, BROKER_CONFIGS_BY_NAME
from coordinator.testing.server_process import ROOT

_WIDTH = {ConfigType.SHORT: 2**15 - 1, ConfigType.INT: 2**31 - 1, ConfigType.LONG: 2**63 - 1}
_NUMERIC = (*_WIDTH, ConfigType.DOUBLE)

# Keys whose value the server never interprets: Kafka takes any string.
FREE_FORM = {"broker.rack": "any string is a rack id (it is echoed in Metadata)",
             "telemetry.default.metrics": "any strings are metric name prefixes (KIP-714)"}

# key: (context, wrong-typed value, out-of-range value, the key the message names when not
# the key itself). Contexts: the listener a key needs to be read, see _context().
SPECIAL: dict[str, tuple[str, str, str, str | None]] = {
    "listeners": ("", "localhost:9092", "PLAINTEXT://127.0.0.1:99999", None),
    "advertised.listeners": ("", "not-a-listener", "PLAINTEXT://127.0.0.1:99999", None),
    "listener.security.protocol.map": ("", "PLAINTEXT", "PLAINTEXT:KERBEROS", None),
    "cluster.listeners": ("cluster", "PLAINTEXT://127.0.0.1:0",
                          "PLAINTEXT://127.0.0.1:99999,PLAINTEXT://127.0.0.1:0", None),
    "cluster.advertised.listeners": ("cluster", "SSL://127.0.0.1:0,",
                                     "PLAINTEXT://h:99999,PLAINTEXT://h:1", None),
    "cluster.racks": ("cluster", "r1", "r1,r2,r3,r4", None),
    "metrics.listener": ("", "127.0.0.1:9404", "http://127.0.0.1:99999", None),
    "control.listener": ("", "http://[::1:9405", "http://127.0.0.1:70000", None),
    "authorizer.class.name": ("", "Authorizer", "kafka.security.authorizer.AclAuthorizer",
                              None),
    "super.users": ("", "alice", "User:alice;bob", None),
    "max.connections.per.ip.overrides": ("", "127.0.0.1", "127.0.0.1:-5", None),
    "log.dirs": ("", "{file}", "{tmp}/" + "x" * 300, None),
    "sasl.jaas.config": ("sasl", "user_alice=secret", "PlainLoginModule required user_a=\"x\"",
                         "listener.name.sasl_plaintext.plain.sasl.jaas.config"),
    "ssl.keystore.type": ("ssl-file", "JKS", "PKCS12", None),
    "ssl.keystore.location": ("ssl-file", "{tmp}", "{tmp}/missing.pem", None),
    "ssl.keystore.certificate.chain": ("ssl-values", "not a certificate", "{key}",
                                       "ssl.keystore.location"),
    "ssl.keystore.key": ("ssl-values", "not a key", "{chain}", "ssl.keystore.location"),
    "ssl.key.password": ("ssl-encrypted", "", "wrong-password", "ssl.keystore.location"),
    "ssl.truststore.type": ("ssl-trust", "JKS", "PKCS12", None),
    "ssl.truststore.location": ("ssl-trust", "{tmp}", "{tmp}/missing.pem", None),
    "ssl.truststore.certificates": ("ssl-file", "not a certificate",
                                    "-----BEGIN CERTIFICATE-----\nAAAA\n"
                                    "-----END CERTIFICATE-----", "ssl.truststore.location"),
}


def _generic(key: str) -> tuple[str, str]:
    """A wrong-typed and an out-of-range value from the definition."""
    definition = BROKER_CONFIGS_BY_NAME[key]
    if definition.type in _NUMERIC:
        if definition.at_least is not None:
            low = definition.at_least
            below = str(int(low) - 1) if definition.type in _WIDTH else str(low - 0.5)
            return "12abc", below
        if definition.at_most is not None:
            return "1_000", str(int(definition.at_most) + 1)
        if definition.type is ConfigType.DOUBLE:
            return "abc", "NaN"
        return "1e3", str(_WIDTH[definition.type] + 1)  # Kafka: "Not a number of type INT"
    if definition.type is ConfigType.BOOLEAN:
        return "yes", "2"
    assert definition.one_of, f"{key}: give it bad values in SPECIAL or list it in FREE_FORM"
    return "bogus", ",".join([*definition.one_of[:1], "bogus"])


def test_every_key_has_bad_values() -> None:
    for definition in BROKER_CONFIGS:
        key = definition.name
        if key in SPECIAL or key in FREE_FORM:
            continue
        wrong, out_of_range = _generic(key)  # asserts that it can
        assert wrong != out_of_range


@pytest.fixture(scope="module")
def stores(tmp_path_factory: pytest.TempPathFactory) -> dict[str, str]:
    directory = tmp_path_factory.mktemp("stores")
    ca = trustme.CA()
    leaf = ca.issue_cert("127.0.0.1", "localhost")
    leaf.private_key_and_cert_chain_pem.write_to_path(str(directory / "server.pem"))
    ca.cert_pem.write_to_path(str(directory / "ca.pem"))
    key = serialization.load_pem_private_key(leaf.private_key_pem.bytes(), password=None)
    encrypted = key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.BestAvailableEncryption(b"secret"))
    chain = b"".join(blob.bytes() for blob in leaf.cert_chain_pems)
    (directory / "encrypted.pem").write_bytes(encrypted + chain)
    (directory / "a-file").write_text("not a directory")
    return {"keystore": str(directory / "server.pem"), "ca": str(directory / "ca.pem"),
            "encrypted": str(directory / "encrypted.pem"), "chain": chain.decode(),
            "key": leaf.private_key_pem.bytes().decode(), "file": str(directory / "a-file")}


def _context(name: str, stores: dict[str, str]) -> dict[str, str]:
    """Valid settings under which the key under test is read."""
    ssl = {"listeners": "SSL://127.0.0.1:0", "ssl.keystore.type": "PEM"}
    return {
        "": {},
        "cluster": {"cluster.brokers": "3"},
        "sasl": {"listeners": "SASL_PLAINTEXT://127.0.0.1:0", "sasl.enabled.mechanisms": "PLAIN"},
        "ssl-file": {**ssl, "ssl.keystore.location": stores["keystore"],
                     "ssl.truststore.type": "PEM"},
        "ssl-values": {**ssl, "ssl.keystore.certificate.chain": stores["chain"],
                       "ssl.keystore.key": stores["key"]},
        "ssl-encrypted": {**ssl, "ssl.keystore.location": stores["encrypted"],
                          "ssl.key.password": "secret"},
        "ssl-trust": {**ssl, "ssl.keystore.location": stores["keystore"],
                      "ssl.truststore.type": "PEM", "ssl.truststore.location": stores["ca"]},
    }[name]


def _cases() -> Iterator[tuple[str, str, str]]:
    for definition in BROKER_CONFIGS:
        key = definition.name
        if key in FREE_FORM:
            continue
        values = SPECIAL[key][1:3] if key in SPECIAL else _generic(key)
        yield key, "wrong-typed", values[0]
        yield key, "out-of-range", values[1]


def _prepare(tmp_path: Path, settings: dict[str, str]) -> int | object:
    argv = ["serve"]
    for key, value in {"log.dirs": str(tmp_path / "data"), "metrics.listener": "",
                       "listeners": "PLAINTEXT://127.0.0.1:0", **settings}.items():
        argv += ["--override", f"{key}={value}"]
    return prepare(_parser().parse_args(argv))


@cache
def _parser() -> argparse.ArgumentParser:
    return build_parser()


def test_the_contexts_are_valid(tmp_path: Path, stores: dict[str, str]) -> None:
    for name in ("", "cluster", "sasl", "ssl-file", "ssl-values", "ssl-encrypted", "ssl-trust"):
        assert not isinstance(_prepare(tmp_path / name, _context(name, stores)), int), name


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("bad-values")


@pytest.mark.parametrize(("key", "kind", "value"), list(_cases()))
def test_a_bad_value_stops_serve_with_kafkas_message(
        key: str, kind: str, value: str, base: Path, stores: dict[str, str],
        capsys: pytest.CaptureFixture[str]) -> None:
    context, _, _, named = SPECIAL.get(key, ("", "", "", None))
    value = value.format(tmp=base, **stores)
    settings = {**_context(context, stores), key: value}
    assert _prepare(base, settings) == 2
    err = capsys.readouterr().err
    assert f"for configuration {named or key}" in err, err
    assert err.startswith("error: Invalid value "), err
    assert "Traceback" not in err


def test_free_form_keys_take_any_string(tmp_path: Path) -> None:
    for key in FREE_FORM:
        assert not isinstance(_prepare(tmp_path, {key: "räck 1/ ☃"}), int)


@pytest.mark.parametrize(("override", "message"), [
    ("listeners=PLAINTEXT://127.0.0.1:99999",
     "Invalid value PLAINTEXT://127.0.0.1:99999 for configuration listeners: "
     "Unable to parse listener port"),
    ("log.dirs=/dev/null/data",
     "Invalid value /dev/null/data for configuration log.dirs: "
     "Failed to create or validate data directory /dev/null/data: Not a directory"),
])
def test_serve_exits_2_without_a_traceback(override: str, message: str) -> None:
    done = subprocess.run([sys.executable, "-m", "coordinator", "serve", "--override", override,
                           "--override", "metrics.listener="],
                          cwd=ROOT, capture_output=True, text=True, timeout=30, check=False)
    assert done.returncode == 2
    assert f"error: {message}" in done.stderr
    assert "Traceback" not in done.stderr
