"""Kafka's ``sasl.jaas.config`` syntax: one or more login module entries, each
``<class> <flag> [key=value ...];`` with values bare or in double quotes, e.g.
``org.apache.kafka.common.security.plain.PlainLoginModule required user_alice="alice-secret";``.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

PLAIN_LOGIN_MODULE = "org.apache.kafka.common.security.plain.PlainLoginModule"
SCRAM_LOGIN_MODULE = "org.apache.kafka.common.security.scram.ScramLoginModule"
CONTROL_FLAGS = ("required", "requisite", "sufficient", "optional")

_TOKEN = re.compile(r'\s*(?:(?P<quoted>"(?:[^"\\]|\\.)*")|(?P<word>[^\s=;"]+)|(?P<punct>[=;]))')


class JaasError(ValueError):
    """A ``sasl.jaas.config`` value that does not parse; the message says where."""


@dataclass(frozen=True, slots=True)
class JaasEntry:
    login_module: str
    control_flag: str
    options: dict[str, str] = field(default_factory=dict)


def _tokens(text: str) -> list[tuple[str, str]]:
    """(kind, text) pairs: ``word``, ``quoted`` (unquoted, escapes resolved) or ``punct``."""
    out: list[tuple[str, str]] = []
    position = 0
    stripped = text.rstrip()
    while position < len(stripped):
        match = _TOKEN.match(stripped, position)
        if match is None:
            raise JaasError(f"Invalid JAAS config: unexpected text at {stripped[position:]!r}")
        position = match.end()
        if match["quoted"] is not None:
            out.append(("quoted", re.sub(r"\\(.)", r"\1", match["quoted"][1:-1])))
        elif match["word"] is not None:
            out.append(("word", match["word"]))
        else:
            out.append(("punct", match["punct"]))
    return out


def parse_jaas_config(text: str) -> list[JaasEntry]:
    tokens = _tokens(text)
    if not tokens:
        raise JaasError("JAAS config property does not contain any login modules")
    entries: list[JaasEntry] = []
    i = 0
    while i < len(tokens):
        if tokens[i][0] != "word":
            raise JaasError(f"Invalid JAAS config: expected a login module, found {tokens[i][1]!r}")
        module = tokens[i][1]
        if i + 1 >= len(tokens) or tokens[i + 1][1].lower() not in CONTROL_FLAGS:
            found = tokens[i + 1][1] if i + 1 < len(tokens) else "the end"
            raise JaasError(f"Invalid JAAS config: invalid control flag {found!r} of {module}")
        flag = tokens[i + 1][1].lower()
        i += 2
        options: dict[str, str] = {}
        while True:
            if i >= len(tokens):
                raise JaasError("Invalid JAAS config: JAAS config entry not terminated by "
                                "semi-colon")
            kind, value = tokens[i]
            if (kind, value) == ("punct", ";"):
                i += 1
                break
            if kind != "word" or i + 2 >= len(tokens) or tokens[i + 1] != ("punct", "="):
                raise JaasError(f"Invalid JAAS config: value not specified for key {value!r}")
            if tokens[i + 2][0] == "punct":
                raise JaasError(f"Invalid JAAS config: value not specified for key {value!r}")
            options[value] = tokens[i + 2][1]
            i += 3
        entries.append(JaasEntry(module, flag, options))
    return entries


def plain_users(entries: list[JaasEntry]) -> dict[str, str]:
    """The ``user_<name>="<password>"`` options of the PlainLoginModule entries, as Kafka's
    ``PlainServerCallbackHandler`` reads them."""
    users: dict[str, str] = {}
    for entry in entries:
        if entry.login_module == PLAIN_LOGIN_MODULE:
            for key, value in entry.options.items():
                if key.startswith("user_"):
                    users[key[len("user_"):]] = value
    return users
