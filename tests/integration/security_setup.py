"""What the security tests share: a throwaway CA and certificates (trustme), a server with every
kind of listener, and the three clients' settings for a listener, mechanism and user.

The server has five listeners: PLAINTEXT, SASL_PLAINTEXT, SASL_SSL, SSL (no client
certificate) and MTLS (SSL with ``ssl.client.auth=required``). PLAIN users come from the SASL
listeners' JAAS configs, SCRAM users from ``--add-scram``.
"""

from __future__ import annotations

import ssl
import struct
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import trustme

from tests.harness import ServerProcess
from tests.integration.conftest import WireClient

USERS = {"alice": "alice-secret", "bob": "bob-secret"}
SCRAM_USER, SCRAM_PASSWORD = "alice", "alice-secret"
PROTOCOL_MAP = ("PLAINTEXT:PLAINTEXT,SSL:SSL,SASL_PLAINTEXT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL,"
                "MTLS:SSL")
LISTENERS = ("PLAINTEXT", "SASL_PLAINTEXT", "SASL_SSL", "SSL", "MTLS")


@dataclass(frozen=True)
class Certs:
    ca: Path
    server: Path
    """The server's key and certificate chain, one PEM file (``ssl.keystore.location``)."""
    client: Path
    """A client's key and certificate chain (CN=client, signed by the CA)."""
    client_cert: Path
    client_key: Path


def make_certs(directory: Path) -> Certs:
    directory.mkdir(parents=True, exist_ok=True)
    ca = trustme.CA()
    server = ca.issue_cert("localhost", "127.0.0.1")
    client = ca.issue_cert("client.example", common_name="client")
    paths = Certs(directory / "ca.pem", directory / "server.pem", directory / "client.pem",
                  directory / "client-cert.pem", directory / "client-key.pem")
    ca.cert_pem.write_to_path(str(paths.ca))
    server.private_key_and_cert_chain_pem.write_to_path(str(paths.server))
    client.private_key_and_cert_chain_pem.write_to_path(str(paths.client))
    client.cert_chain_pems[0].write_to_path(str(paths.client_cert))
    client.private_key_pem.write_to_path(str(paths.client_key))
    return paths


def plain_jaas(users: dict[str, str]) -> str:
    options = " ".join(f'user_{name}="{password}"' for name, password in users.items())
    return f"org.apache.kafka.common.security.plain.PlainLoginModule required {options};"


def secure_server(log_dir: Path, certs: Certs, overrides: dict[str, str] | None = None,
                  extra_args: list[str] | None = None) -> ServerProcess:
    """A server (not started) with every kind of listener."""
    settings = {
        "listeners": ",".join(f"{name}://127.0.0.1:0" for name in LISTENERS),
        "listener.security.protocol.map": PROTOCOL_MAP,
        "ssl.keystore.type": "PEM",
        "ssl.keystore.location": str(certs.server),
        "listener.name.mtls.ssl.client.auth": "required",
        "listener.name.mtls.ssl.truststore.type": "PEM",
        "listener.name.mtls.ssl.truststore.location": str(certs.ca),
        "listener.name.sasl_plaintext.plain.sasl.jaas.config": plain_jaas(USERS),
        "listener.name.sasl_ssl.plain.sasl.jaas.config": plain_jaas(USERS),
        "group.initial.rebalance.delay.ms": "0",
        **(overrides or {}),
    }
    seeds = [f"{mechanism}=[name={SCRAM_USER},password={SCRAM_PASSWORD}]"
             for mechanism in ("SCRAM-SHA-256", "SCRAM-SHA-512")]
    args = [arg for seed in seeds for arg in ("--add-scram", seed)]
    return ServerProcess(log_dir, settings, extra_args=args + (extra_args or []))


def port(server: ServerProcess, listener: str) -> int:
    event = server.event("listening", listener=listener)
    assert event is not None, f"no {listener} listener"
    return int(event["port"])


def bootstrap(server: ServerProcess, listener: str) -> str:
    return f"127.0.0.1:{port(server, listener)}"


def security_protocol(listener: str) -> str:
    return "SSL" if listener == "MTLS" else listener


# --- the three clients' settings --------------------------------------------------------------
def confluent_config(server: ServerProcess, certs: Certs, listener: str,
                     mechanism: str | None = None, user: str = "alice",
                     password: str | None = None) -> dict[str, Any]:
    config: dict[str, Any] = {"bootstrap.servers": bootstrap(server, listener),
                              "security.protocol": security_protocol(listener)}
    if mechanism is not None:
        config.update({"sasl.mechanism": mechanism, "sasl.username": user,
                       "sasl.password": USERS[user] if password is None else password})
    if "SSL" in listener or listener == "MTLS":
        config["ssl.ca.location"] = str(certs.ca)
    if listener == "MTLS":
        config.update({"ssl.certificate.location": str(certs.client_cert),
                       "ssl.key.location": str(certs.client_key)})
    return config


def kafka_python_config(server: ServerProcess, certs: Certs, listener: str,
                        mechanism: str | None = None, user: str = "alice",
                        password: str | None = None) -> dict[str, Any]:
    config: dict[str, Any] = {"bootstrap_servers": bootstrap(server, listener),
                              "security_protocol": security_protocol(listener)}
    if mechanism is not None:
        config.update(sasl_mechanism=mechanism, sasl_plain_username=user,
                      sasl_plain_password=USERS[user] if password is None else password)
    if "SSL" in listener or listener == "MTLS":
        config["ssl_cafile"] = str(certs.ca)
    if listener == "MTLS":
        config.update(ssl_certfile=str(certs.client_cert), ssl_keyfile=str(certs.client_key))
    return config


def aiokafka_config(server: ServerProcess, certs: Certs, listener: str,
                    mechanism: str | None = None, user: str = "alice",
                    password: str | None = None) -> dict[str, Any]:
    config: dict[str, Any] = {"bootstrap_servers": bootstrap(server, listener),
                              "security_protocol": security_protocol(listener)}
    if mechanism is not None:
        config.update(sasl_mechanism=mechanism, sasl_plain_username=user,
                      sasl_plain_password=USERS[user] if password is None else password)
    if "SSL" in listener or listener == "MTLS":
        context = ssl.create_default_context(cafile=str(certs.ca))
        if listener == "MTLS":
            context.load_cert_chain(str(certs.client))
        config["ssl_context"] = context
    return config


# --- raw wire ---------------------------------------------------------------------------------
def wire(server: ServerProcess, certs: Certs, listener: str, timeout: float = 5.0) -> WireClient:
    """A raw connection to a listener, in TLS on the TLS ones."""
    client = WireClient(bootstrap(server, listener), timeout)
    if "SSL" in listener:
        context = ssl.create_default_context(cafile=str(certs.ca))
        client.sock = context.wrap_socket(client.sock, server_hostname="127.0.0.1")
    return client


def send_token(client: WireClient, token: bytes) -> None:
    """A bare SASL token, as after a SaslHandshake v0."""
    client.send_raw(struct.pack(">i", len(token)) + token)
