"""A regex resolution as a background task (:mod:`.regex` says when the group asks for one):
each regex's matching topic names, matched as Kafka's RE2/J ``Matcher.matches`` does (whole
names), with the RE2 binding.

This module imports only RE2 and the standard library: it is what worker processes load (the
executor's forkserver imports it once). A worker runs at the lowest CPU priority (SCHED_IDLE),
so a resolution that first had to import the group coordinator's modules there (a third of a
second of CPU) could wait tens of seconds on a machine whose cores are busy.
"""

from __future__ import annotations

import time
from typing import Any

import re2

OPTIONS = re2.Options()
OPTIONS.log_errors = False


def compile_regex(regex: str) -> Any:
    """``regex`` compiled by RE2 (``re2.error`` when it does not compile)."""
    return re2.compile(regex, OPTIONS)


def resolve_all(payload: tuple[tuple[str, ...], tuple[str, ...]]
                ) -> tuple[dict[str, tuple[str, ...]], float]:
    """The background task (Kafka's ``refreshRegularExpressions``): each regex's matching
    topic names, and how long it took (ms). Regexes were checked when members brought them;
    one that does not compile here matches nothing."""
    began = time.perf_counter()
    regexes, names = payload
    compiled = []
    for regex in regexes:
        try:
            compiled.append((regex, compile_regex(regex)))
        except re2.error:
            pass
    found: dict[str, list[str]] = {regex: [] for regex in regexes}
    for regex, pattern in compiled:
        matches = found[regex]
        match = pattern.fullmatch
        for name in names:
            if match(name) is not None:
                matches.append(name)
    return ({regex: tuple(topics) for regex, topics in found.items()},
            (time.perf_counter() - began) * 1000.0)
