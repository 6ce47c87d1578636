"""SCRAM credentials as Kafka keeps them: per user and mechanism the salt, the stored key, the
server key and the iteration count (never the password), as ``UserScramCredential`` records in
``__cluster_metadata-0``; and the ``--add-scram`` syntax of Kafka's ``kafka-storage format``
(``SCRAM-SHA-256=[name=alice,password=alice-secret]``) that seeds them.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
import os
from dataclasses import dataclass
from enum import IntEnum
from typing import Any

from storage.records import UserScramCredentialKey, UserScramCredentialValue

MIN_ITERATIONS = 4096
"""Kafka's ``ScramMechanism.minIterations`` (both mechanisms)."""
MAX_ITERATIONS = 16384
"""Kafka's ``ScramControlManager.MAX_ITERATIONS`` (and ``ScramMechanism.maxIterations``)."""


class ScramMechanism(IntEnum):
    """Kafka's ``org.apache.kafka.clients.admin.ScramMechanism`` type codes."""

    UNKNOWN = 0
    SCRAM_SHA_256 = 1
    SCRAM_SHA_512 = 2

    @property
    def mechanism_name(self) -> str:
        return self.name.replace("_", "-")

    @property
    def hash_name(self) -> str:
        return {ScramMechanism.SCRAM_SHA_256: "sha256",
                ScramMechanism.SCRAM_SHA_512: "sha512"}[self]

    @classmethod
    def of(cls, code_or_name: int | str) -> ScramMechanism:
        """The mechanism of a type code or a SASL name; UNKNOWN for any other."""
        for mechanism in cls:
            if code_or_name in (int(mechanism), mechanism.mechanism_name) and mechanism:
                return mechanism
        return cls.UNKNOWN


@dataclass(frozen=True, slots=True)
class ScramCredential:
    salt: bytes
    stored_key: bytes
    server_key: bytes
    iterations: int

    def __repr__(self) -> str:  # as Kafka's ScramCredentialValue.toString: nothing leaks
        return "ScramCredential(salt=[hidden], stored_key=[hidden], server_key=[hidden])"


def salted_password(mechanism: ScramMechanism, password: str, salt: bytes,
                    iterations: int) -> bytes:
    """RFC 5802's ``Hi(password, salt, i)`` (Kafka's ``ScramFormatter.saltedPassword``)."""
    return hashlib.pbkdf2_hmac(mechanism.hash_name, password.encode(), salt, iterations)


def credential(mechanism: ScramMechanism, salt: bytes, salted: bytes,
               iterations: int) -> ScramCredential:
    """The stored and server keys of a salted password (Kafka's ``ScramFormatter``)."""
    digest = mechanism.hash_name
    client_key = hmac.new(salted, b"Client Key", digest).digest()
    stored_key = hashlib.new(digest, client_key).digest()
    server_key = hmac.new(salted, b"Server Key", digest).digest()
    return ScramCredential(salt, stored_key, server_key, iterations)


def from_password(mechanism: ScramMechanism, password: str, iterations: int = MIN_ITERATIONS,
                  salt: bytes | None = None) -> ScramCredential:
    salt = os.urandom(32) if salt is None else salt
    return credential(mechanism, salt, salted_password(mechanism, password, salt, iterations),
                      iterations)


Record = tuple[UserScramCredentialKey, UserScramCredentialValue | None]


def record(name: str, mechanism: ScramMechanism, value: ScramCredential) -> Record:
    return UserScramCredentialKey(name=name, mechanism=int(mechanism)), UserScramCredentialValue(
        salt=value.salt, stored_key=value.stored_key, server_key=value.server_key,
        iterations=value.iterations)


def removal(name: str, mechanism: ScramMechanism) -> Record:
    """Kafka's ``RemoveUserScramCredentialRecord``: a tombstone of the credential's key."""
    return UserScramCredentialKey(name=name, mechanism=int(mechanism)), None


class ScramCredentials:
    """Every SCRAM credential, by user and mechanism (Kafka's ``ScramImage``); what SCRAM
    authentication reads and Describe/AlterUserScramCredentials change."""

    def __init__(self) -> None:
        self._by_user: dict[str, dict[ScramMechanism, ScramCredential]] = {}

    def get(self, name: str, mechanism: ScramMechanism) -> ScramCredential | None:
        return self._by_user.get(name, {}).get(mechanism)

    def of_user(self, name: str) -> dict[ScramMechanism, ScramCredential]:
        return dict(self._by_user.get(name, {}))

    def users(self) -> list[str]:
        return sorted(self._by_user)

    def __len__(self) -> int:
        return sum(len(by_mechanism) for by_mechanism in self._by_user.values())

    def replay(self, key: Any, value: Any) -> bool:
        """Apply one record; False if it is no SCRAM credential record."""
        if not isinstance(key, UserScramCredentialKey):
            return False
        mechanism = ScramMechanism.of(key.mechanism)
        if value is None:
            by_mechanism = self._by_user.get(key.name, {})
            by_mechanism.pop(mechanism, None)
            if not by_mechanism:
                self._by_user.pop(key.name, None)
        else:
            self._by_user.setdefault(key.name, {})[mechanism] = ScramCredential(
                value.salt, value.stored_key, value.server_key, value.iterations)
        return True


ScramSeed = tuple[str, ScramMechanism, ScramCredential]
"""A credential to add at start: (user, mechanism, credential)."""


class AddScramError(ValueError):
    """A bad ``--add-scram`` argument; the message is Kafka's ``FormatterException``'s."""


def parse_add_scram(text: str) -> ScramSeed:
    """``MECHANISM=[name=...,password=...]`` (or ``salt=<base64>,saltedpassword=<base64>``,
    ``iterations=N``) -> (user, mechanism, credential), as Kafka's ``ScramParser``."""
    text = text.strip()
    mechanism_name, equals, config = text.partition("=")
    if not equals:
        raise AddScramError(f"Failed to find equals sign in SCRAM argument '{text}'")
    mechanism = ScramMechanism.of(mechanism_name)
    if not mechanism:
        raise AddScramError(f"The add-scram mechanism {mechanism_name} is not supported.")
    if not config.startswith("["):
        raise AddScramError("Expected configuration string to start with [")
    if not config.endswith("]"):
        raise AddScramError("Expected configuration string to end with ]")
    components: dict[str, str] = {}
    for component in config[1:-1].split(","):
        key, equals, value = component.partition("=")
        if not equals:
            raise AddScramError(f"No equals sign found in SCRAM component: {component}")
        if len(value) >= 2 and value.startswith('"') and value.endswith('"'):
            value = value[1:-1]
        components[key] = value
    name = components.pop("name", None)
    if name is None:
        raise AddScramError("You must supply 'name' to add-scram")
    salt = _base64(components.pop("salt", None), "Failed to decode given salt: ")
    iterations_text = components.pop("iterations", None)
    try:
        iterations = MIN_ITERATIONS if iterations_text is None else int(iterations_text)
    except ValueError:
        raise AddScramError(f"Failed to parse iterations count: {iterations_text}") from None
    password = components.pop("password", None)
    salted_text = components.pop("saltedpassword", None)
    if password is None:
        if salted_text is None:
            raise AddScramError("You must supply one of 'password' or 'saltedpassword' to "
                                "add-scram")
        if salt is None:
            raise AddScramError("You must supply 'salt' with 'saltedpassword' to add-scram")
    if components:
        raise AddScramError(f"Unknown SCRAM configurations: {', '.join(sorted(components))}")
    if iterations < MIN_ITERATIONS:
        raise AddScramError(f"The 'iterations' value must be >= {MIN_ITERATIONS} for add-scram "
                            f"using {mechanism.mechanism_name}")
    if iterations > MAX_ITERATIONS:
        raise AddScramError(f"The 'iterations' value must be <= {MAX_ITERATIONS} for add-scram "
                            f"using {mechanism.mechanism_name}")
    salt = os.urandom(32) if salt is None else salt
    salted = (salted_password(mechanism, password, salt, iterations) if password is not None
              else _base64(salted_text, "Failed to decode given saltedPassword: "))
    assert salted is not None
    return name, mechanism, credential(mechanism, salt, salted, iterations)


def _base64(text: str | None, message: str) -> bytes | None:
    if text is None:
        return None
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError):
        raise AddScramError(message + text) from None
