"""storage.flusher: fsyncs done by the helper process, answered on the event loop; errors
reported; a file handed over once per slot; a lost helper replaced by threads of this process,
with what it had not answered answered RETRY (never as durable)."""

from __future__ import annotations

import asyncio
import errno
import os
import signal
import socket
from pathlib import Path

import pytest

from storage.flusher import RETRY, Flusher
from storage.flusher_process import MAX_FILES, Files, decode_round, encode_round

pytestmark = pytest.mark.timeout(30)


async def fsync_all(flusher: Flusher, files: list[tuple[int, int]]) -> list[int]:
    """fsync ``files`` (slot, fd) in one call; their outcomes, in order."""
    loop = asyncio.get_running_loop()
    outcomes = [loop.create_future() for _ in files]
    flusher.fsync([(slot, fd, outcome.set_result)
                   for (slot, fd), outcome in zip(files, outcomes, strict=True)])
    return list(await asyncio.wait_for(asyncio.gather(*outcomes), 10))


def open_file(path: Path) -> int:
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_APPEND, 0o644)
    os.write(fd, b"record")
    return fd


def helper_fds(flusher: Flusher) -> set[str]:
    """The files the helper process holds open."""
    assert flusher._process is not None
    fd_dir = Path(f"/proc/{flusher._process.pid}/fd")
    found = set()
    for entry in fd_dir.iterdir():
        try:
            found.add(os.readlink(entry))
        except OSError:
            continue
    return found


async def test_the_helper_process_fsyncs_the_files_it_is_given(tmp_path: Path) -> None:
    flusher = Flusher(4)
    flusher.start(asyncio.get_running_loop())
    try:
        assert not flusher.in_process
        # more new files than one message passes: every one is answered, each with its own
        many = [(slot, open_file(tmp_path / f"f{slot}")) for slot in range(MAX_FILES + 50)]
        assert await fsync_all(flusher, many) == [0] * len(many)
        assert await fsync_all(flusher, many[:3]) == [0, 0, 0]  # known files: by id only
        read_end, write_end = os.pipe()  # fsync of a pipe fails (EINVAL): the errno comes back
        assert await fsync_all(flusher, [(1000, read_end), (0, many[0][1])]) \
            == [errno.EINVAL, 0]
        assert not flusher.in_process and flusher._pending == {}
        for fd in (read_end, write_end, *(fd for _, fd in many)):
            os.close(fd)
    finally:
        flusher.close()


async def test_a_new_file_in_a_slot_lets_the_old_one_go(tmp_path: Path) -> None:
    """A partition's segment rolled: the helper closes the old segment's descriptor (a
    deleted segment's space is freed) and fsyncs the new one."""
    flusher = Flusher(2)
    flusher.start(asyncio.get_running_loop())
    try:
        old = open_file(tmp_path / "00000000.log")
        assert await fsync_all(flusher, [(7, old)]) == [0]
        assert str(tmp_path / "00000000.log") in helper_fds(flusher)
        new = open_file(tmp_path / "00000100.log")
        assert await fsync_all(flusher, [(7, new)]) == [0]
        held = helper_fds(flusher)
        assert str(tmp_path / "00000100.log") in held
        assert str(tmp_path / "00000000.log") not in held
        os.close(old)
        os.close(new)
    finally:
        flusher.close()


async def test_a_lost_helper_answers_retry_and_threads_take_over(tmp_path: Path) -> None:
    flusher = Flusher(4)
    flusher.start(asyncio.get_running_loop())
    try:
        fd = open_file(tmp_path / "f")
        assert await fsync_all(flusher, [(0, fd)]) == [0]
        process = flusher._process
        assert process is not None
        process.send_signal(signal.SIGSTOP)  # it takes the request, and never answers
        asking = asyncio.ensure_future(fsync_all(flusher, [(0, fd)]))
        await asyncio.sleep(0)
        assert not asking.done()
        process.send_signal(signal.SIGKILL)
        assert await asking == [RETRY]  # not known to be durable: to be asked again
        assert flusher.in_process
        assert await fsync_all(flusher, [(0, fd), (1, fd)]) == [0, 0]  # on threads now
        os.close(fd)
    finally:
        flusher.close()


async def test_without_the_helper_the_fsyncs_run_on_threads(tmp_path: Path) -> None:
    flusher = Flusher(2, use_process=False)
    flusher.start(asyncio.get_running_loop())
    try:
        assert flusher.in_process
        fds = [open_file(tmp_path / f"f{i}") for i in range(5)]
        assert await fsync_all(flusher, list(enumerate(fds))) == [0] * 5
        for fd in fds:
            os.close(fd)
    finally:
        flusher.close()


def test_a_round_message_decodes_to_what_was_encoded() -> None:
    message = encode_round([5, 6], [(10, 5), (11, 2), (12, 6)], [1])
    assert decode_round(message) == ([5, 6], [(10, 5), (11, 2), (12, 6)], [1])
    assert decode_round(encode_round([], [], [])) == ([], [], [])


def test_a_file_let_go_during_its_fsync_is_closed_after_it(tmp_path: Path) -> None:
    files = Files()
    fd = open_file(tmp_path / "f")
    files.open(1, fd)
    assert files.take(1) == fd
    files.let_go(1)  # an fsync of it is under way: still open
    os.fstat(fd)
    files.give_back(1)
    with pytest.raises(OSError):
        os.fstat(fd)
    assert files.take(1) is None


async def test_where_the_helper_cannot_be_reached_the_fsyncs_run_on_threads(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_seqpacket(*args: object) -> None:
        raise OSError(errno.EPROTONOSUPPORT, "Protocol not supported")

    monkeypatch.setattr(socket, "socketpair", no_seqpacket)
    flusher = Flusher(2)
    flusher.start(asyncio.get_running_loop())
    try:
        assert flusher.in_process and flusher._process is None
        fd = open_file(tmp_path / "f")
        assert await fsync_all(flusher, [(0, fd)]) == [0]
        os.close(fd)
    finally:
        flusher.close()
