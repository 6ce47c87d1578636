"""What a SASL mechanism's server side is (Kafka's ``javax.security.sasl.SaslServer``), and the
two ways its exchange fails, as Kafka tells them apart."""

from __future__ import annotations

from typing import Protocol


class SaslAuthenticationError(Exception):
    """Kafka's ``SaslAuthenticationException``: the client is sent this message."""


class SaslError(Exception):
    """Kafka's ``SaslException``: the message is only logged; the client is sent "Authentication
    failed during authentication due to invalid credentials with SASL mechanism <name>", which
    says nothing of whether the user exists."""


class SaslServer(Protocol):
    mechanism: str

    def evaluate(self, token: bytes) -> bytes:
        """The next challenge (empty when there is none); raises ``SaslAuthenticationError``
        or ``SaslError`` when the client fails."""
        ...

    @property
    def complete(self) -> bool:
        """True once the client is authenticated."""
        ...

    @property
    def authorization_id(self) -> str:
        """The authenticated user (valid once complete)."""
        ...
