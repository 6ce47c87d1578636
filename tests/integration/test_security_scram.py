"""SCRAM credentials managed as Kafka manages them: DescribeUserScramCredentials and
AlterUserScramCredentials from confluent-kafka's AdminClient (over SASL_SSL), kept as records in
``__cluster_metadata-0`` across a restart, ``--add-scram`` seeding a user only once."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest
from confluent_kafka import KafkaError, KafkaException
from confluent_kafka.admin import (
    AdminClient,
    ScramCredentialInfo,
    ScramMechanism,
    UserScramCredentialDeletion,
    UserScramCredentialUpsertion,
)

from tests.harness import ServerProcess
from tests.integration.security_setup import (
    Certs,
    confluent_config,
    make_certs,
    secure_server,
)


@pytest.fixture(scope="module")
def certs(tmp_path_factory: pytest.TempPathFactory) -> Certs:
    return make_certs(tmp_path_factory.mktemp("certs"))


def admin(server: ServerProcess, certs: Certs) -> AdminClient:
    return AdminClient(confluent_config(server, certs, "SASL_SSL", "SCRAM-SHA-256"))


def can_log_in(server: ServerProcess, certs: Certs, user: str, password: str,
               mechanism: str) -> bool:
    """Whether the server lets ``user`` in: a metadata request answered, or the server's own
    "failed authentication" for the mechanism. A request that only timed out (the TLS and
    SCRAM exchanges on a loaded machine) is neither, and is tried again."""
    config = confluent_config(server, certs, "SASL_SSL", mechanism, user="alice",
                              password=password)
    config["sasl.username"] = user
    failed_before = len(failures(server, mechanism))
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        try:
            AdminClient(config).list_topics(timeout=1.5)
        except KafkaException:
            if len(failures(server, mechanism)) > failed_before:
                return False
            continue
        return True
    raise AssertionError(f"{user} neither logged in nor was refused within 60 s")


def failures(server: ServerProcess, mechanism: str) -> list[dict[str, Any]]:
    return [e for e in server.events_of("failed authentication")
            if e.get("mechanism") == mechanism]


def iterations(description: Any) -> dict[str, int]:
    return {info.mechanism.name: info.iterations
            for info in description.scram_credential_infos}


def upsert(user: str, mechanism: ScramMechanism, count: int, password: str) -> Any:
    return UserScramCredentialUpsertion(user, ScramCredentialInfo(mechanism, count),
                                        password.encode())


def error_of(future: Any) -> int:
    with pytest.raises(KafkaException) as raised:
        future.result(10)
    code: int = raised.value.args[0].code()
    return code


@pytest.mark.slow
def test_alter_describe_and_keep_credentials_across_a_restart(tmp_path: Path,
                                                              certs: Certs) -> None:
    data = tmp_path / "data"
    with secure_server(data, certs) as server:
        client = admin(server, certs)
        everyone: Any = client.describe_user_scram_credentials()
        described = everyone.result(10)
        assert {user: iterations(d) for user, d in described.items()} == {
            "alice": {"SCRAM_SHA_256": 4096, "SCRAM_SHA_512": 4096}}
        # a new user, one mechanism
        futures = client.alter_user_scram_credentials(
            [upsert("carol", ScramMechanism.SCRAM_SHA_512, 8192, "carol-secret")])
        futures["carol"].result(10)
        assert can_log_in(server, certs, "carol", "carol-secret", "SCRAM-SHA-512")
        assert not can_log_in(server, certs, "carol", "carol-secret", "SCRAM-SHA-256")
        # Kafka's checks
        bad = client.alter_user_scram_credentials(
            [upsert("dave", ScramMechanism.SCRAM_SHA_256, 100, "x"),
             UserScramCredentialDeletion("erin", ScramMechanism.SCRAM_SHA_256)])
        assert error_of(bad["dave"]) == KafkaError.UNACCEPTABLE_CREDENTIAL
        assert error_of(bad["erin"]) == KafkaError.RESOURCE_NOT_FOUND
        missing: Any = client.describe_user_scram_credentials(["nobody"])
        assert error_of(missing["nobody"]) == KafkaError.RESOURCE_NOT_FOUND
        server.stop()
    # after a restart: carol's credential is still there; alice's seed is not written again
    server = secure_server(data, certs)
    with server:
        assert server.event("scram credential kept", user="alice",
                            mechanism="SCRAM-SHA-256") is not None
        assert can_log_in(server, certs, "carol", "carol-secret", "SCRAM-SHA-512")
        client = admin(server, certs)
        carol: Any = client.describe_user_scram_credentials(["carol"])
        assert iterations(carol["carol"].result(10)) == {"SCRAM_SHA_512": 8192}
        deleted = client.alter_user_scram_credentials(
            [UserScramCredentialDeletion("carol", ScramMechanism.SCRAM_SHA_512)])
        deleted["carol"].result(10)
        assert not can_log_in(server, certs, "carol", "carol-secret", "SCRAM-SHA-512")
        server.wait_event("failed authentication", mechanism="SCRAM-SHA-512")
