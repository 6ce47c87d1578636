"""Paths in configs, checked before the server starts: ``log.dirs`` must be a directory the
server can create and write, so that a bad one stops the start with a message, not an
``OSError`` later. Nothing is created here."""

from __future__ import annotations

import errno
import os
from pathlib import Path

from .model import ConfigError

__all__ = ["check_log_dir"]


def _problem(directory: Path) -> str | None:
    """Why ``directory`` cannot be created and written, or None."""
    missing: list[str] = []
    existing = directory
    while not existing.exists():
        if existing.is_symlink():
            return "a dangling symbolic link is in the way"
        missing.append(existing.name)
        if existing.parent == existing:
            break
        existing = existing.parent
    if not existing.is_dir():
        return os.strerror(errno.ENOTDIR)
    if not os.access(existing, os.W_OK | os.X_OK):
        return f"{os.strerror(errno.EACCES)} ({existing})"
    limit = os.pathconf(existing, "PC_NAME_MAX")
    for name in missing:
        if len(os.fsencode(name)) > limit:
            return os.strerror(errno.ENAMETOOLONG)
    if len(os.fsencode(str(directory))) >= os.pathconf(existing, "PC_PATH_MAX"):
        return os.strerror(errno.ENAMETOOLONG)
    return None


def check_log_dir(name: str, value: str) -> None:
    """A ``ConfigError`` for ``name`` unless ``value`` names a directory that exists and is
    writable, or can be created (Kafka: "Failed to create or validate data directory")."""
    if not value.strip():
        raise ConfigError(name, value, "The log directory may not be empty")
    directory = Path(value).absolute()
    try:
        problem = _problem(directory)
    except (OSError, ValueError) as exc:  # ValueError: an embedded NUL byte
        problem = getattr(exc, "strerror", None) or str(exc)
    if problem is not None:
        raise ConfigError(name, value,
                          f"Failed to create or validate data directory {directory}: {problem}")
