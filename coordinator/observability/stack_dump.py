"""``kill -QUIT <pid>`` dumps the server's stacks to stderr, as a JVM's thread dump does: every
thread's Python stack at once (``faulthandler``, which answers even when the event loop is
stuck in a call), then, when the loop next runs, every asyncio task's stack, so a shutdown or a
request that never finishes shows what it is waiting on."""

from __future__ import annotations

import asyncio
import faulthandler
import io
import signal
import sys


def task_stacks(loop: asyncio.AbstractEventLoop) -> str:
    """Every task of ``loop`` with the frames it is suspended in, innermost last."""
    out = io.StringIO()
    tasks = sorted(asyncio.all_tasks(loop), key=lambda task: task.get_name())
    out.write(f"asyncio tasks ({len(tasks)}):\n")
    for task in tasks:
        task.print_stack(file=out)
    return out.getvalue()


def install(loop: asyncio.AbstractEventLoop) -> None:
    """On SIGQUIT: the threads' stacks from the signal handler, the tasks' from ``loop``."""
    def dump_tasks() -> None:
        sys.stderr.write(task_stacks(loop))
        sys.stderr.flush()

    loop.add_signal_handler(signal.SIGQUIT, dump_tasks)
    # chained: faulthandler writes the threads' stacks, then the loop's handler is woken
    faulthandler.register(signal.SIGQUIT, file=sys.stderr, all_threads=True, chain=True)


def uninstall(loop: asyncio.AbstractEventLoop) -> None:
    faulthandler.unregister(signal.SIGQUIT)
    loop.remove_signal_handler(signal.SIGQUIT)
