"""SASL on the wire, byte for byte as Kafka's ``SaslServerAuthenticator`` answers: what is
accepted before authentication, the handshake's answers, SaslHandshake v0's bare tokens, the
failures and their messages, and the two SASL APIs once authenticated or on a listener without
SASL."""

from __future__ import annotations

import struct
import time
from collections.abc import Iterator
from typing import Any

import pytest

import protocol
from protocol import ErrorCode
from tests.harness import ServerProcess
from tests.integration.conftest import WireClient, api_versions_v0, kio_class, metadata_request
from tests.integration.security_setup import (
    Certs,
    make_certs,
    port,
    secure_server,
    send_token,
    wire,
)

ENABLED = ("PLAIN", "SCRAM-SHA-256", "SCRAM-SHA-512")


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


@pytest.fixture(scope="module")
def server(tmp_path_factory: pytest.TempPathFactory, certs: Certs) -> Iterator[ServerProcess]:
    with secure_server(tmp_path_factory.mktemp("wire") / "data", certs,
                       {"listener.name.sasl_plaintext.sasl.server.max.receive.size": "4096"}
                       ) as process:
        yield process


@pytest.fixture
def sasl(server: ServerProcess, certs: Certs) -> Iterator[WireClient]:
    client = wire(server, certs, "SASL_PLAINTEXT")
    try:
        yield client
    finally:
        client.close()


def handshake(version: int, mechanism: str) -> Any:
    return protocol.make(kio_class("sasl_handshake", version, "request", "SaslHandshakeRequest"),
                         mechanism=mechanism)


def authenticate(version: int, token: bytes) -> Any:
    return protocol.make(kio_class("sasl_authenticate", version, "request",
                                   "SaslAuthenticateRequest"), auth_bytes=token)


def plain(user: str, password: str) -> bytes:
    return f"\0{user}\0{password}".encode()


def find_coordinator() -> Any:
    return protocol.make(kio_class("find_coordinator", 3, "request", "FindCoordinatorRequest"),
                         key="g", key_type=0)


def no_answer_then_closed(client: WireClient) -> bool:
    """The server closed the connection without writing anything."""
    client.sock.settimeout(5)
    try:
        data = client.sock.recv(1)
    except OSError:
        return True
    finally:
        client.sock.settimeout(client.timeout)
    return data == b""


# --- before the handshake ----------------------------------------------------------------------
def test_another_request_before_authentication_closes_the_connection(
        sasl: WireClient, server: ServerProcess) -> None:
    sasl.send(metadata_request(12))
    assert no_answer_then_closed(sasl)
    server.wait_event("failed authentication",
                      reason="Unexpected Kafka request of type METADATA during SASL handshake.")


def test_api_versions_once_then_the_handshake(sasl: WireClient) -> None:
    versions = sasl.request(api_versions_v0())
    assert versions.error_code == ErrorCode.none
    advertised = {int(k.api_key): (int(k.min_version), int(k.max_version))
                  for k in versions.api_keys}
    assert advertised[17] == (0, 1) and advertised[36] == (0, 2)
    sasl.send(api_versions_v0())  # a second one: Kafka's IllegalStateException
    assert no_answer_then_closed(sasl)


def test_an_api_versions_error_lets_the_client_try_again(sasl: WireClient) -> None:
    frame = bytearray(protocol.encode_request(api_versions_v0(), 1, "wire-test"))
    struct.pack_into(">h", frame, 6, 99)  # a version nobody knows
    sasl.send_raw(bytes(frame))
    _, answer = sasl.recv(18, 0)
    assert answer.error_code == ErrorCode.unsupported_version
    assert sasl.request(api_versions_v0()).error_code == ErrorCode.none
    assert sasl.request(handshake(1, "PLAIN")).error_code == ErrorCode.none


def test_a_mechanism_not_enabled_is_refused_with_the_enabled_ones(sasl: WireClient) -> None:
    answer = sasl.request(handshake(1, "GSSAPI"))
    assert answer.error_code == ErrorCode.unsupported_sasl_mechanism
    assert tuple(answer.mechanisms) == ENABLED
    assert sasl.is_closed()


# --- SaslHandshake v1: tokens in SaslAuthenticate ------------------------------------------------
def test_plain_in_sasl_authenticate_then_requests(sasl: WireClient,
                                                  server: ServerProcess) -> None:
    assert sasl.request(handshake(1, "PLAIN")).mechanisms == ENABLED
    answer = sasl.request(authenticate(1, plain("bob", "bob-secret")))
    assert (answer.error_code, answer.auth_bytes) == (ErrorCode.none, b"")
    assert answer.session_lifetime.total_seconds() == 0  # no re-authentication
    assert sasl.request(metadata_request(12)).brokers[0].port == port(server, "SASL_PLAINTEXT")
    # once authenticated the SASL APIs come too late, as in Kafka's KafkaApis
    assert sasl.request(handshake(1, "PLAIN")).error_code == ErrorCode.illegal_sasl_state
    late = sasl.request(authenticate(2, plain("bob", "bob-secret")))
    assert late.error_code == ErrorCode.illegal_sasl_state
    assert late.error_message == "SaslAuthenticate request received after successful " \
                                 "authentication"


def test_a_wrong_password_is_answered_then_the_connection_closes(sasl: WireClient) -> None:
    sasl.request(handshake(1, "PLAIN"))
    started = time.monotonic()
    answer = sasl.request(authenticate(2, plain("bob", "not-bobs")))
    assert time.monotonic() - started >= 0.09  # connection.failed.authentication.delay.ms
    assert answer.error_code == ErrorCode.sasl_authentication_failed
    assert answer.error_message == "Authentication failed: Invalid username or password"
    assert sasl.is_closed()


def test_an_unknown_plain_user_gets_the_same_answer(sasl: WireClient) -> None:
    sasl.request(handshake(1, "PLAIN"))
    answer = sasl.request(authenticate(0, plain("mallory", "x")))
    assert answer.error_message == "Authentication failed: Invalid username or password"


def test_an_unknown_scram_user_learns_nothing_more(sasl: WireClient) -> None:
    sasl.request(handshake(1, "SCRAM-SHA-256"))
    answer = sasl.request(authenticate(1, b"n,,n=mallory,r=abcdefghijklmnop"))
    assert answer.error_code == ErrorCode.sasl_authentication_failed
    assert answer.error_message == ("Authentication failed during authentication due to invalid "
                                    "credentials with SASL mechanism SCRAM-SHA-256")
    assert sasl.is_closed()


def test_another_request_instead_of_sasl_authenticate(sasl: WireClient) -> None:
    sasl.request(handshake(1, "PLAIN"))
    answer = sasl.request(find_coordinator())
    assert answer.error_code == ErrorCode.illegal_sasl_state
    assert sasl.is_closed()


# --- SaslHandshake v0: bare tokens ---------------------------------------------------------------
def test_handshake_v0_then_a_bare_plain_token(sasl: WireClient, server: ServerProcess) -> None:
    assert sasl.request(handshake(0, "PLAIN")).error_code == ErrorCode.none
    send_token(sasl, plain("alice", "alice-secret"))
    assert sasl.recv_frame() == b""  # PLAIN's empty challenge, size-prefixed, no header
    assert sasl.request(metadata_request(12)).brokers
    server.wait_event("authenticated", listener="SASL_PLAINTEXT", mechanism="PLAIN",
                      principal="User:alice")


def test_handshake_v0_with_a_wrong_password_closes_without_an_answer(sasl: WireClient) -> None:
    sasl.request(handshake(0, "PLAIN"))
    send_token(sasl, plain("alice", "wrong"))
    assert no_answer_then_closed(sasl)


# --- limits and other listeners -------------------------------------------------------------------
def test_a_frame_over_sasl_server_max_receive_size_fails_authentication(
        sasl: WireClient) -> None:
    sasl.send_raw(struct.pack(">i", 5000) + b"\0" * 5000)
    assert no_answer_then_closed(sasl)


def test_sasl_ssl_authenticates_inside_tls(server: ServerProcess, certs: Certs) -> None:
    with wire(server, certs, "SASL_SSL") as client:
        assert client.request(handshake(1, "PLAIN")).error_code == ErrorCode.none
        assert client.request(authenticate(2, plain("alice", "alice-secret"))).error_code == 0
        assert client.request(metadata_request(12)).brokers[0].port == port(server, "SASL_SSL")


def test_sasl_apis_on_a_listener_without_sasl(server: ServerProcess, certs: Certs) -> None:
    with wire(server, certs, "PLAINTEXT") as client:
        assert client.request(handshake(1, "PLAIN")).error_code == ErrorCode.illegal_sasl_state
        assert client.request(authenticate(0, b"")).error_code == ErrorCode.illegal_sasl_state
        assert client.request(metadata_request(12)).brokers
