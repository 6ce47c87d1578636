"""SASL/PLAIN's server side (RFC 4616), as Kafka's ``PlainSaslServer`` with
``PlainServerCallbackHandler``: ``[authzid] NUL authcid NUL passwd`` checked against the
``user_<name>`` options of the listener's JAAS config."""

from __future__ import annotations

import hmac
from collections.abc import Mapping

from .mechanism import SaslAuthenticationError, SaslError


class PlainServer:
    mechanism = "PLAIN"

    def __init__(self, users: Mapping[str, str]) -> None:
        self._users = users
        self._user = ""
        self._complete = False

    def evaluate(self, token: bytes) -> bytes:
        parts = token.decode("utf-8", errors="replace").split("\0")
        if len(parts) != 3:
            raise SaslError(f"Invalid SASL/PLAIN response: expected 3 tokens, got {len(parts)}")
        authorization_id, username, password = parts
        if not username:
            raise SaslAuthenticationError("Authentication failed: username not specified")
        if not password:
            raise SaslAuthenticationError("Authentication failed: password not specified")
        expected = self._users.get(username)
        # compare even for an unknown user, so that the time taken does not tell
        matches = hmac.compare_digest(password.encode(), (expected or "\0" + password).encode())
        if expected is None or not matches:
            raise SaslAuthenticationError("Authentication failed: Invalid username or password")
        if authorization_id and authorization_id != username:
            raise SaslAuthenticationError("Authentication failed: Client requested an "
                                          "authorization id that is different from username")
        self._user = username
        self._complete = True
        return b""

    @property
    def complete(self) -> bool:
        return self._complete

    @property
    def authorization_id(self) -> str:
        return self._user
