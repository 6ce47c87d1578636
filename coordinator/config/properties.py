"""Java ``.properties`` files, the subset Kafka's server.properties use."""

from __future__ import annotations

from pathlib import Path


def parse_properties(text: str) -> dict[str, str]:
    """``key=value`` / ``key: value`` lines; ``#`` and ``!`` comments; ``\\`` continuations."""
    result: dict[str, str] = {}
    logical = ""
    for raw in text.splitlines():
        line = raw.strip() if not logical else raw.lstrip()
        if not logical and (not line or line[0] in "#!"):
            continue
        if line.endswith("\\") and not line.endswith("\\\\"):
            logical += line[:-1]
            continue
        logical += line
        key, value = _split(logical)
        result[key] = value
        logical = ""
    if logical:
        key, value = _split(logical)
        result[key] = value
    return result


def _split(line: str) -> tuple[str, str]:
    for index, char in enumerate(line):
        if char in "=:":
            return line[:index].strip(), line[index + 1 :].strip()
        if char.isspace():
            rest = line[index:].lstrip()
            if rest[:1] in ("=", ":"):
                rest = rest[1:]
            return line[:index].strip(), rest.strip()
    return line.strip(), ""


def read_properties(path: str | Path) -> dict[str, str]:
    return parse_properties(Path(path).read_text(encoding="utf-8"))
