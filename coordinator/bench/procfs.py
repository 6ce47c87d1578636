"""What Linux's /proc says of a process: its CPU time, its children, its memory figures (for
the benches and soaks, which report the server's CPU and RSS)."""

from __future__ import annotations

import os
from pathlib import Path


def _stat_fields(pid: int) -> list[str]:
    """The fields of ``/proc/PID/stat`` after the command name (the state is field 0)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def cpu_seconds(pid: int) -> float:
    """User plus system CPU time of process ``pid`` so far."""
    fields = _stat_fields(pid)
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def children(pid: int) -> set[int]:
    """The live child processes of ``pid`` (the server's fsync helper, its assignor pool)."""
    found = set()
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                parent = int(_stat_fields(int(entry.name))[1])
            except (OSError, IndexError, ValueError):
                continue  # gone meanwhile
            if parent == pid:
                found.add(int(entry.name))
    return found


def status_kb(pid: int, field: str) -> int | None:
    """A ``/proc/PID/status`` figure in KiB (``VmRSS``, ``VmHWM``), None if it has none."""
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(f"{field}:"):
            return int(line.split()[1])
    return None
