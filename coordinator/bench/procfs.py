"""What Linux's /proc says of a process: its CPU time, its children, its memory figures (for
the benches and soaks, which report the server's CPU and RSS)."""

from __future__ import annotations

from pathlib import Path


def _stat_fields(pid: int) -> list[str]:
    """The fields of ``/proc/PID/stat`` after the command name (the state is field 0)."""
    return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()


def thread_cpu_ns(pid: int) -> dict[int, int]:
    """CPU time in ns of each live thread of process ``pid`` (``/proc/PID/task/TID/schedstat``,
    the scheduler's own count; ``/proc/PID/stat`` gives it in clock ticks, 10 ms on most
    kernels, so that a short window of a lightly loaded server could read as no CPU at all)."""
    found = {}
    for task in Path(f"/proc/{pid}/task").iterdir():
        try:
            found[int(task.name)] = int((task / "schedstat").read_text().split()[0])
        except (OSError, IndexError, ValueError):
            continue  # the thread ended meanwhile
    return found


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
