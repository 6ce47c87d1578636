"""The pure parts of ``coordinator/security/`` (authentication, TLS, connection limits) and the
listener configs: JAAS parsing, PLAIN, SCRAM against scramp's client, credentials and
``--add-scram``, the SCRAM admin checks, the SASL state machine, quotas, certificate
principals, TLS contexts."""

from __future__ import annotations

import asyncio
import base64
import ssl
from pathlib import Path

import pytest
import scramp
import trustme

import protocol
from coordinator.config import ConfigError, ServerConfig
from coordinator.security.credentials import (
    AddScramError,
    ScramCredentials,
    ScramMechanism,
    credential,
    from_password,
    parse_add_scram,
    record,
    removal,
)
from coordinator.security.jaas import JaasError, parse_jaas_config, plain_users
from coordinator.security.limits import ConnectionQuotas, TooManyConnections, parse_overrides
from coordinator.security.mechanism import SaslAuthenticationError, SaslError
from coordinator.security.plain import PlainServer
from coordinator.security.sasl import SaslAuthenticator, SaslState
from coordinator.security.scram import ScramServer
from coordinator.security.scram_admin import Deletion, Upsertion, alter, describe
from coordinator.security.tls import certificate_principal, server_context
from protocol import ErrorCode

PLAIN_JAAS = ('org.apache.kafka.common.security.plain.PlainLoginModule required '
              'username="admin" password="admin-secret" user_admin="admin-secret" '
              'user_alice="alice-secret";')


# --- JAAS -----------------------------------------------------------------------------------
def test_jaas_config_of_plain_users() -> None:
    [entry] = parse_jaas_config(PLAIN_JAAS)
    assert entry.control_flag == "required"
    assert plain_users([entry]) == {"admin": "admin-secret", "alice": "alice-secret"}


def test_jaas_config_quoting_and_several_entries() -> None:
    entries = parse_jaas_config(
        'a.B required user_x="p\\"w;d" opt=bare; c.D OPTIONAL;')
    assert [(e.login_module, e.control_flag, e.options) for e in entries] == [
        ("a.B", "required", {"user_x": 'p"w;d', "opt": "bare"}), ("c.D", "optional", {})]
    assert plain_users(entries) == {}  # not PlainLoginModule's


@pytest.mark.parametrize("text, message", [
    ("", "does not contain any login modules"),
    ("a.B required user_x=\"1\"", "not terminated by semi-colon"),
    ("a.B always;", "invalid control flag 'always'"),
    ("a.B required user_x=;", "value not specified for key 'user_x'"),
])
def test_jaas_config_errors(text: str, message: str) -> None:
    with pytest.raises(JaasError, match=message):
        parse_jaas_config(text)


# --- PLAIN ------------------------------------------------------------------------------------
def test_plain_accepts_a_user_with_its_password() -> None:
    server = PlainServer({"alice": "alice-secret"})
    assert server.evaluate(b"\0alice\0alice-secret") == b""
    assert server.complete and server.authorization_id == "alice"
    assert PlainServer({"alice": "s"}).evaluate(b"alice\0alice\0s") == b""  # authzid = user


@pytest.mark.parametrize("token, error, message", [
    (b"\0alice\0wrong", SaslAuthenticationError, "Invalid username or password"),
    (b"\0mallory\0x", SaslAuthenticationError, "Invalid username or password"),
    (b"\0\0x", SaslAuthenticationError, "username not specified"),
    (b"\0alice\0", SaslAuthenticationError, "password not specified"),
    (b"bob\0alice\0alice-secret", SaslAuthenticationError, "different from username"),
    (b"alice\0alice-secret", SaslError, "expected 3 tokens, got 2"),
])
def test_plain_failures_are_kafkas(token: bytes, error: type[Exception], message: str) -> None:
    with pytest.raises(error, match=message):
        PlainServer({"alice": "alice-secret"}).evaluate(token)


# --- SCRAM ------------------------------------------------------------------------------------
@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_our_keys_are_scramps(mechanism: str) -> None:
    kind = ScramMechanism.of(mechanism)
    salt, stored, server_key, count = scramp.ScramMechanism(mechanism).make_auth_info(
        "pw", iteration_count=4096, salt=b"0123456789abcdef")
    assert from_password(kind, "pw", 4096, salt) == credential(
        kind, salt, __import__("hashlib").pbkdf2_hmac(kind.hash_name, b"pw", salt, 4096), 4096)
    ours = from_password(kind, "pw", 4096, salt)
    assert (ours.stored_key, ours.server_key, ours.iterations) == (stored, server_key, count)


def store_with(user: str, password: str, mechanism: str) -> ScramCredentials:
    store = ScramCredentials()
    kind = ScramMechanism.of(mechanism)
    assert store.replay(*record(user, kind, from_password(kind, password)))
    return store


def exchange(server: ScramServer, client: scramp.ScramClient) -> None:
    first = server.evaluate(client.get_client_first().encode())
    client.set_server_first(first.decode())
    final = server.evaluate(client.get_client_final().encode())
    client.set_server_final(final.decode())  # checks the server's signature


@pytest.mark.parametrize("mechanism", ["SCRAM-SHA-256", "SCRAM-SHA-512"])
def test_scram_exchange_with_scramps_client(mechanism: str) -> None:
    server = ScramServer(mechanism, store_with("alice", "alice-secret", mechanism))
    exchange(server, scramp.ScramClient([mechanism], "alice", "alice-secret"))
    assert server.complete and server.authorization_id == "alice"


def test_scram_failures_tell_the_client_nothing() -> None:
    store = store_with("alice", "alice-secret", "SCRAM-SHA-256")
    with pytest.raises(SaslError, match="Invalid client credentials"):
        exchange(ScramServer("SCRAM-SHA-256", store),
                 scramp.ScramClient(["SCRAM-SHA-256"], "alice", "wrong"))
    with pytest.raises(SaslError, match="Invalid user credentials"):
        exchange(ScramServer("SCRAM-SHA-256", store),
                 scramp.ScramClient(["SCRAM-SHA-256"], "mallory", "x"))
    with pytest.raises(SaslError):  # alice has no SCRAM-SHA-512 credential
        exchange(ScramServer("SCRAM-SHA-512", store),
                 scramp.ScramClient(["SCRAM-SHA-512"], "alice", "alice-secret"))
    with pytest.raises(SaslError, match="Delegation token"):
        ScramServer("SCRAM-SHA-256", store).evaluate(b"n,,n=alice,r=abc,tokenauth=true")
    with pytest.raises(SaslAuthenticationError, match="authorization id"):
        ScramServer("SCRAM-SHA-256", store).evaluate(b"n,a=bob,n=alice,r=abcdef")


def test_credentials_store_replays_values_and_tombstones() -> None:
    store = store_with("alice", "a", "SCRAM-SHA-256")
    kind = ScramMechanism.SCRAM_SHA_256
    assert store.users() == ["alice"] and len(store) == 1
    assert "hidden" in repr(store.get("alice", kind))
    store.replay(*removal("alice", kind))
    assert store.users() == [] and store.get("alice", kind) is None
    assert not store.replay(object(), None)


# --- --add-scram (Kafka's ScramParser) ------------------------------------------------------------
def test_add_scram_with_a_password() -> None:
    name, mechanism, value = parse_add_scram("SCRAM-SHA-256=[name=alice,password=alice-secret]")
    assert (name, mechanism, value.iterations) == ("alice", ScramMechanism.SCRAM_SHA_256, 4096)
    assert value == from_password(mechanism, "alice-secret", 4096, value.salt)


def test_add_scram_with_a_salted_password_as_kafkas_test() -> None:
    salted = base64.b64encode(b"salted-password-bytes").decode()
    name, mechanism, value = parse_add_scram(
        f'SCRAM-SHA-512=[name=alice,iterations=8192,salt="N3E=",saltedpassword="{salted}"]')
    assert (name, mechanism, value.iterations, value.salt) == (
        "alice", ScramMechanism.SCRAM_SHA_512, 8192, base64.b64decode("N3E="))
    assert value == credential(mechanism, value.salt, b"salted-password-bytes", 8192)


@pytest.mark.parametrize("text, message", [
    ("SCRAM-SHA-256", "Failed to find equals sign in SCRAM argument 'SCRAM-SHA-256'"),
    ("SCRAM-SHA-1=[name=a,password=b]", "The add-scram mechanism SCRAM-SHA-1 is not supported."),
    ("SCRAM-SHA-256=name=a]", "Expected configuration string to start with ["),
    ("SCRAM-SHA-256=[name=a", "Expected configuration string to end with ]"),
    ("SCRAM-SHA-256=[password=b]", "You must supply 'name' to add-scram"),
    ("SCRAM-SHA-256=[name=a]", "You must supply one of 'password' or 'saltedpassword'"),
    ("SCRAM-SHA-256=[name=a,saltedpassword=YWJj]", "You must supply 'salt' with"),
    ("SCRAM-SHA-256=[name=a,password=b,iterations=10]",
     "The 'iterations' value must be >= 4096 for add-scram using SCRAM-SHA-256"),
    ("SCRAM-SHA-512=[name=a,password=b,iterations=16385]",
     "The 'iterations' value must be <= 16384 for add-scram using SCRAM-SHA-512"),
    ("SCRAM-SHA-256=[name=a,password=b,color=red]", "Unknown SCRAM configurations: color"),
    ("SCRAM-SHA-256=[name=a,password=b,iterations=x]", "Failed to parse iterations count: x"),
    ("SCRAM-SHA-256=[name=a,password=b,salt=!!]", "Failed to decode given salt: !!"),
])
def test_add_scram_errors_are_kafkas(text: str, message: str) -> None:
    with pytest.raises(AddScramError) as raised:
        parse_add_scram(text)
    assert str(raised.value).startswith(message)


# --- Describe/AlterUserScramCredentials (Kafka's ScramControlManager, ScramImage) ---------------
def test_describe_all_named_missing_and_duplicate_users() -> None:
    store = store_with("alice", "a", "SCRAM-SHA-512")
    [everyone] = describe(store, None)
    assert (everyone.user, everyone.credentials) == (
        "alice", ((ScramMechanism.SCRAM_SHA_512, 4096),))
    missing, twice = describe(store, ["bob", "alice", "alice"])
    assert (missing.error, missing.message) == (
        ErrorCode.resource_not_found,
        "Attempt to describe a user credential that does not exist: bob")
    assert (twice.user, twice.error) == ("alice", ErrorCode.duplicate_resource)


def test_alter_checks_each_user_and_writes_only_the_good_changes() -> None:
    store = store_with("alice", "a", "SCRAM-SHA-256")
    records, results = alter(store, [
        Deletion("alice", 1), Deletion("zed", 1), Deletion("", 1), Deletion("yan", 7),
    ], [
        Upsertion("bob", 2, 4096, b"salt", b"salted"), Upsertion("carl", 1, 4095, b"s", b"p"),
        Upsertion("dora", 1, 16385, b"s", b"p"), Upsertion("bob", 2, 4096, b"s", b"p"),
    ])
    outcome = {r.user: (r.error, r.message) for r in results}
    assert outcome == {
        "alice": (ErrorCode.none, None),
        "zed": (ErrorCode.resource_not_found,
                "Attempt to delete a user credential that does not exist"),
        "": (ErrorCode.unacceptable_credential, "Username must not be empty"),
        "yan": (ErrorCode.unsupported_sasl_mechanism, "Unknown SCRAM mechanism"),
        "carl": (ErrorCode.unacceptable_credential, "Too few iterations"),
        "dora": (ErrorCode.unacceptable_credential, "Too many iterations"),
        "bob": (ErrorCode.duplicate_resource,
                "A user credential cannot be altered twice in the same request"),
    }
    assert records == [removal("alice", ScramMechanism.SCRAM_SHA_256)]


def test_an_upsertion_stores_the_keys_of_the_salted_password() -> None:
    records, _ = alter(ScramCredentials(), [], [Upsertion("bob", 2, 5000, b"salt", b"salted")])
    store = ScramCredentials()
    for key, value in records:
        store.replay(key, value)
    kind = ScramMechanism.SCRAM_SHA_512
    assert store.get("bob", kind) == credential(kind, b"salt", b"salted", 5000)


# --- the SASL state machine ---------------------------------------------------------------------
def frame(body: object, version_override: int | None = None) -> bytes:
    data = bytearray(protocol.encode_request(body, 5, "unit"))
    if version_override is not None:
        data[6:8] = version_override.to_bytes(2, "big")
    return bytes(data[4:])


def kio(api: str, version: int, name: str, **fields: object) -> object:
    module = __import__(f"kio.schema.{api}.v{version}.request", fromlist=[name])
    return protocol.make(getattr(module, name), **fields)


def authenticator(users: dict[str, str]) -> SaslAuthenticator:
    answers = {True: b"\0\0\0\6\0\0\0\5\0\0", False: b"\0\0\0\6\0\0\0\5\0\x23"}

    def api_versions(data: bytes) -> bytes:
        return answers[data[2:4] == b"\0\0"]

    return SaslAuthenticator(["PLAIN"], {"PLAIN": lambda: PlainServer(users)}, api_versions)


def test_api_versions_error_keeps_the_state_and_a_good_one_moves_on() -> None:
    auth = authenticator({"a": "b"})
    versions = kio("api_versions", 0, "ApiVersionsRequest")
    assert not auth.receive(frame(versions, version_override=9)).failed
    assert auth.state is SaslState.HANDSHAKE_OR_VERSIONS_REQUEST
    auth.receive(frame(versions))
    assert auth.state is SaslState.HANDSHAKE_REQUEST
    assert auth.receive(frame(versions)).failed


def test_handshake_v0_takes_bare_tokens() -> None:
    auth = authenticator({"a": "b"})
    step = auth.receive(frame(kio("sasl_handshake", 0, "SaslHandshakeRequest",
                                  mechanism="PLAIN")))
    assert step.response and not step.failed
    done = auth.receive(b"\0a\0b")
    assert done.authenticated and done.response == b"\0\0\0\0"
    assert auth.principal == "User:a"


def test_unexpected_requests_and_garbage_fail_without_an_answer() -> None:
    step = authenticator({}).receive(frame(kio("metadata", 12, "MetadataRequest", topics=None)))
    assert step.failed and not step.response
    assert step.reason == "Unexpected Kafka request of type METADATA during SASL handshake."
    garbage = authenticator({}).receive(b"\x60\x81")
    assert garbage.failed and "GSSAPI is not supported" in garbage.reason


# --- connection limits ---------------------------------------------------------------------------
def test_per_ip_limits_and_overrides() -> None:
    quotas = ConnectionQuotas(10, 2, {"10.0.0.1": 0}, {"A": 10})
    quotas.inc("A", "127.0.0.1")
    quotas.inc("A", "127.0.0.1")
    with pytest.raises(TooManyConnections, match="configured maximum of 2 connections"):
        quotas.inc("A", "127.0.0.1")
    with pytest.raises(TooManyConnections):
        quotas.inc("A", "10.0.0.1")
    assert quotas.count("127.0.0.1") == 2 and quotas.total == 2


def test_max_connections_waits_for_a_slot() -> None:
    async def scenario() -> list[str]:
        quotas = ConnectionQuotas(1, 10, {}, {"A": 10, "B": 10})
        quotas.inc("A", "h")
        order: list[str] = []

        async def waiter() -> None:
            await quotas.wait_for_slot("B")
            order.append("slot")

        task = asyncio.create_task(waiter())
        await asyncio.sleep(0.01)
        order.append("dec")
        quotas.dec("A", "h")
        await task
        return order

    assert asyncio.run(scenario()) == ["dec", "slot"]


def test_overrides_parse_hosts_and_counts() -> None:
    assert parse_overrides("127.0.0.1:5, localhost:7") == {"127.0.0.1": 7}
    with pytest.raises(ConfigError, match="not of the form host:count"):
        parse_overrides("127.0.0.1")


# --- TLS ------------------------------------------------------------------------------------------
def test_certificate_principal_is_kafkas_rfc2253_name() -> None:
    subject = ((("countryName", "US"),), (("organizationName", "Acme, Inc"),),
               (("commonName", "alice"),))
    assert certificate_principal({"subject": subject}) == "User:CN=alice,O=Acme\\, Inc,C=US"
    assert certificate_principal({}) is None and certificate_principal(None) is None


@pytest.fixture(scope="module")
def pems(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, str, str]:
    directory = tmp_path_factory.mktemp("pems")
    ca = trustme.CA()
    leaf = ca.issue_cert("localhost")
    leaf.private_key_and_cert_chain_pem.write_to_path(str(directory / "server.pem"))
    ca.cert_pem.write_to_path(str(directory / "ca.pem"))
    chain = "".join(blob.bytes().decode() for blob in leaf.cert_chain_pems)
    return directory / "server.pem", directory / "ca.pem", chain, leaf.private_key_pem.bytes(
    ).decode()


def test_tls_context_from_a_pem_file_and_from_pem_values(
        pems: tuple[Path, Path, str, str]) -> None:
    keystore, ca, chain, key = pems
    from_file = server_context(ServerConfig.from_sources({
        "ssl.keystore.type": "PEM", "ssl.keystore.location": str(keystore),
        "listener.name.ssl.ssl.client.auth": "required", "ssl.truststore.type": "PEM",
        "ssl.truststore.location": str(ca)}), "SSL")
    assert from_file.verify_mode == ssl.CERT_REQUIRED
    assert from_file.minimum_version == ssl.TLSVersion.TLSv1_2
    from_values = server_context(ServerConfig.from_sources({
        "ssl.keystore.type": "PEM", "ssl.keystore.certificate.chain": chain,
        "ssl.keystore.key": key, "ssl.enabled.protocols": "TLSv1.3"}), "SSL")
    assert from_values.verify_mode == ssl.CERT_NONE
    assert from_values.minimum_version == ssl.TLSVersion.TLSv1_3


def test_tls_context_errors(pems: tuple[Path, Path, str, str]) -> None:
    keystore = pems[0]
    with pytest.raises(ConfigError, match="Only PEM stores are supported"):
        server_context(ServerConfig.from_sources({"ssl.keystore.location": str(keystore)}),
                       "SSL")
    with pytest.raises(ConfigError, match="needs a key store"):
        server_context(ServerConfig.from_sources({}), "SSL")
    with pytest.raises(ConfigError, match="Cannot load the key store"):
        server_context(ServerConfig.from_sources({"ssl.keystore.type": "PEM",
                                                  "ssl.keystore.location": "/nonexistent"}),
                       "SSL")


# --- listener configs -----------------------------------------------------------------------
def test_listeners_get_their_security_protocols() -> None:
    config = ServerConfig.from_sources({
        "listeners": "CLIENT://127.0.0.1:9093,SASL_SSL://:9094",
        "listener.security.protocol.map": "CLIENT:SASL_PLAINTEXT,SASL_SSL:SASL_SSL",
        "advertised.listeners": "CLIENT://example.com:19093"})
    assert [(lst.name, lst.security_protocol) for lst in config.listeners] == [
        ("CLIENT", "SASL_PLAINTEXT"), ("SASL_SSL", "SASL_SSL")]
    assert [(lst.host, lst.port) for lst in config.advertised_listeners] == [
        ("example.com", 19093), ("", 9094)]


@pytest.mark.parametrize("values, message", [
    ({"listeners": "CLIENT://:1"}, "No security protocol defined for listener CLIENT"),
    ({"listeners": "SSL://:1,SSL://:2"}, "Each listener must have a different name"),
    ({"listeners": "SSL://:1,PLAINTEXT://:1"}, "Each listener must have a different port"),
    ({"listener.security.protocol.map": "A:TLS"}, "Unknown security protocol TLS"),
    ({"advertised.listeners": "SSL://h:1"},
     "advertised.listeners listener names must be equal to or a subset"),
    ({"listener.name.plaintext.max.connections": "-1"},
     "Invalid value -1 for configuration listener.name.plaintext.max.connections"),
    ({"sasl.enabled.mechanisms": "GSSAPI"}, "String must be one of: PLAIN, SCRAM-SHA-256"),
    ({"max.connections.per.ip": "0"}, "can be set to zero only if "
     "max.connections.per.ip.overrides property is set"),
])
def test_listener_config_errors(values: dict[str, str], message: str) -> None:
    with pytest.raises(ConfigError, match=message):
        ServerConfig.from_sources(values)


def test_per_listener_values_and_jaas_configs() -> None:
    config = ServerConfig.from_sources({
        "listener.name.sasl_ssl.ssl.client.auth": "requested",
        "listener.name.sasl_ssl.plain.sasl.jaas.config": PLAIN_JAAS,
        "sasl.jaas.config": "fallback", "listener.name.x.no.such.key": "1"})
    assert config.for_listener("SASL_SSL", "ssl.client.auth") == "requested"
    assert config.for_listener("SSL", "ssl.client.auth") == "none"
    assert config.jaas_config("SASL_SSL", "PLAIN") == PLAIN_JAAS
    assert config.jaas_config("SASL_PLAINTEXT", "PLAIN") == "fallback"
    assert config.unknown == {"listener.name.x.no.such.key": "1"}


# --- the command line -----------------------------------------------------------------------
@pytest.mark.slow
@pytest.mark.parametrize("args, message", [
    (["--add-scram", "SCRAM-SHA-256=[password=x]"], "You must supply 'name' to add-scram"),
    (["--override", "listeners=SSL://127.0.0.1:0"], "needs a key store"),
    (["--override", "listeners=SASL_PLAINTEXT://127.0.0.1:0", "--override",
      "listener.name.sasl_plaintext.plain.sasl.jaas.config=PlainLoginModule required x"],
     "Invalid JAAS config: value not specified for key 'x'"),
])
def test_serve_stops_with_exit_code_2_on_a_bad_security_setting(
        tmp_path: Path, args: list[str], message: str) -> None:
    import subprocess
    import sys

    done = subprocess.run(
        [sys.executable, "-m", "coordinator", "serve", "--override", f"log.dirs={tmp_path}",
         "--override", "metrics.listener=", *args],
        cwd=Path(__file__).resolve().parents[2], capture_output=True, text=True, timeout=60,
        check=False)
    assert done.returncode == 2, done.stderr
    assert message in done.stderr
