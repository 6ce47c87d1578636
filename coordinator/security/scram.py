"""SASL/SCRAM-SHA-256 and SCRAM-SHA-512's server side (RFC 5802, no channel binding), as
Kafka's ``ScramSaslServer``: the exchange is scramp's; the credentials are the users' in
``ScramCredentials``. A failure is a ``SaslError``, so the client learns nothing of whether the
user exists (Kafka's generic "invalid credentials" message). One difference: an authorization
id equal to the user name (which no client of the three sends) fails too.

scramp is imported by the first SCRAM exchange, not with this module: it brings asn1crypto
(~0.1 s of CPU), which a server whose listeners no SCRAM client authenticates on never needs."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .credentials import ScramCredentials, ScramMechanism
from .mechanism import SaslAuthenticationError, SaslError

if TYPE_CHECKING:
    import scramp


class ScramServer:
    def __init__(self, mechanism: str, credentials: ScramCredentials) -> None:
        self.mechanism = mechanism
        self._kind = ScramMechanism.of(mechanism)
        if not self._kind:
            raise ValueError(f"not a SCRAM mechanism: {mechanism}")
        self._credentials = credentials
        import scramp

        self._error: type[scramp.ScramException] = scramp.ScramException
        self._server = scramp.ScramMechanism(mechanism).make_server(self._lookup)
        self._user = ""
        self._stage = 0  # 0: waiting for client-first, 1: for client-final, 2: complete

    def _lookup(self, username: str) -> tuple[bytes, bytes, bytes, int] | None:
        self._user = username
        found = self._credentials.get(username, self._kind)
        if found is None:
            return None
        return found.salt, found.stored_key, found.server_key, found.iterations

    def evaluate(self, token: bytes) -> bytes:
        try:
            message = token.decode("utf-8")
        except UnicodeDecodeError:
            raise SaslError("SCRAM message is not UTF-8") from None
        if self._stage == 0:
            return self._client_first(message)
        if self._stage == 1:
            return self._client_final(message)
        raise SaslError("Unexpected SCRAM message after authentication completed")

    def _client_first(self, message: str) -> bytes:
        flag, _, rest = message.partition(",")
        authzid, _, bare = rest.partition(",")
        if flag != "n" or (authzid and not authzid.startswith("a=")):
            raise SaslError("Invalid SCRAM client first message format")
        attributes = bare.split(",")
        if any(part.startswith("tokenauth=") for part in attributes):
            raise SaslError("Delegation token authentication is not supported")
        if authzid:
            name = next((part[2:] for part in attributes if part.startswith("n=")), "")
            if authzid[2:] != name.replace("=2C", ",").replace("=3D", "="):
                raise SaslAuthenticationError("Authentication failed: Client requested an "
                                              "authorization id that is different from "
                                              "username")
            # Kafka accepts an authzid equal to the user; scramp accepts none (and the GS2
            # header is part of what the proof signs), so this one fails as bad credentials
        try:
            self._server.set_client_first(message)
        except self._error as exc:
            raise SaslError(f"Authentication failed: Invalid user credentials ({exc})") from None
        self._stage = 1
        return str(self._server.get_server_first()).encode()

    def _client_final(self, message: str) -> bytes:
        try:
            self._server.set_client_final(message)
            final = self._server.get_server_final()
        except self._error as exc:
            raise SaslError(f"Invalid client credentials ({exc})") from None
        self._stage = 2
        return str(final).encode()

    @property
    def complete(self) -> bool:
        return self._stage == 2

    @property
    def authorization_id(self) -> str:
        return self._user
