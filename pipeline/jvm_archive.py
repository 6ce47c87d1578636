"""A class-data archive for the JVM the pipeline starts (HotSpot's dynamic AppCDS).

A Spark driver loads about 20,000 classes from Spark's jars; reading and verifying them is a
large part of what a short job waits for. A dynamic archive holds them parsed and verified: a
JVM started with ``-XX:SharedArchiveFile`` maps it instead (measured on 2 cores: a session
starts ~1.5 s sooner and the report job over 5M records runs ~4 s faster).

The archive is made by a training run (:func:`build`, or ``python -m pipeline.jvm_archive
PATH``): a small report job in its own process, whose JVM is started with
``-XX:ArchiveClassesAtExit`` and writes the classes it loaded when it exits. It is kept in
``$XDG_CACHE_HOME/coordinator-pipeline`` (``~/.cache`` by default) under a name that changes
with the Java executable, the PySpark package and this interpreter, since an archive is only
valid for the JVM and class path that made it. ``PIPELINE_JVM_ARCHIVE`` names another file, or
``off`` turns the archive off. Runs that find it missing at once (:func:`ensure`) make it once:
the first holds a lock on the archive's directory while it trains, the others wait for it and
then start from its archive. A JVM that cannot use an archive (another JDK build, a damaged
file) starts without it, as if it were absent (``-Xshare:auto``).
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

ENV = "PIPELINE_JVM_ARCHIVE"
OFF = "off"
TRAINING_RECORDS = 30_000
"""Records in the training run's store: enough for every table and plot of the job."""


def java_executable() -> Path | None:
    """The ``java`` Spark's launcher runs: ``$JAVA_HOME/bin/java``, else the one on PATH."""
    home = os.environ.get("JAVA_HOME")
    found = str(Path(home) / "bin" / "java") if home else shutil.which("java")
    return Path(found).resolve() if found and Path(found).exists() else None


def archive_key() -> str:
    """What the archive is valid for: the Java executable (path, size, time) and the PySpark
    package (version, place) this interpreter runs."""
    import pyspark

    java = java_executable()
    parts = [sys.executable, pyspark.__version__, str(Path(pyspark.__file__).resolve().parent)]
    if java is not None:
        st = java.stat()
        parts += [str(java), str(st.st_size), str(st.st_mtime_ns)]
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:16]


def archive_path() -> Path | None:
    """Where the archive is (or would be) kept; None when turned off."""
    setting = os.environ.get(ENV, "")
    if setting == OFF:
        return None
    if setting:
        return Path(setting)
    cache = Path(os.environ.get("XDG_CACHE_HOME") or Path.home() / ".cache")
    return cache / "coordinator-pipeline" / f"spark-classes-{archive_key()}.jsa"


def java_options() -> str:
    """The JVM option that maps the archive, if there is one; else nothing."""
    path = archive_path()
    if path is None or not path.is_file():
        return ""
    return f"-XX:SharedArchiveFile={path}"


def build(path: Path | None = None, timeout_s: float = 600) -> float:
    """Make the archive at ``path`` (default :func:`archive_path`) with a training run, and
    return the seconds it took. The file appears whole or not at all (written aside, then
    renamed)."""
    target = path if path is not None else archive_path()
    if target is None:
        raise ValueError(f"{ENV}={OFF}: no archive to build")
    target.parent.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    fd, tmp_name = tempfile.mkstemp(prefix=target.name + ".", suffix=".tmp", dir=target.parent)
    os.close(fd)
    tmp = Path(tmp_name)
    tmp.unlink()  # the JVM creates it
    try:
        subprocess.run([sys.executable, "-m", "pipeline.jvm_archive", str(tmp)], check=True,
                       timeout=timeout_s, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        if not tmp.is_file() or tmp.stat().st_size == 0:
            raise RuntimeError(f"the training run's JVM wrote no archive at {tmp}")
        os.replace(tmp, target)
    except subprocess.CalledProcessError as e:
        raise RuntimeError("the training run failed: " + e.stderr.decode(errors="replace")
                           [-2000:]) from e
    finally:
        tmp.unlink(missing_ok=True)
    return time.perf_counter() - t0


def missing_hint() -> str | None:
    """A line for a job about to start without the archive (None when it has one, or it is
    turned off)."""
    path = archive_path()
    if path is None or path.is_file():
        return None
    return ("no JVM class archive: `python -m pipeline archive` makes one once (~40 s), and "
            "later runs start from it, seconds sooner")


@contextmanager
def _directory_lock(directory: Path) -> Iterator[None]:
    """An exclusive lock on ``directory`` (flock on the directory itself: nothing is written
    beside the archive), released when the block ends or the process dies."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def ensure(say: bool = True, path: Path | None = None) -> Path | None:
    """The archive at ``path`` (default :func:`archive_path`), made first if missing (a minute
    at most, once per machine and install); None when turned off. Made under a lock on its
    directory: a run that finds another making it waits for that one and uses its archive."""
    target = path if path is not None else archive_path()
    if target is None or target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with _directory_lock(target.parent):
        if target.is_file():  # made meanwhile by the run that held the lock
            return target
        seconds = build(target)
    if say:
        print(f"made the JVM class archive {target} in {seconds:.1f}s", file=sys.stderr,
              flush=True)
    return target


def _train(target: Path) -> None:
    """The training run: the report job over a small synthetic store, in a JVM that writes
    the classes it loaded to ``target`` when it exits (which this waits for)."""
    from pyspark import SparkContext

    from pipeline.job import JobOptions, run
    from pipeline.session import build_session
    from pipeline.synthetic import write_store

    with tempfile.TemporaryDirectory(prefix="pipeline-training-") as work:
        store = Path(work) / "store"
        write_store(store, TRAINING_RECORDS, partitions=2, segment_bytes=256 * 1024)
        spark = build_session("local[2]", progress=False, class_archive=False,
                              java_options=f"-XX:ArchiveClassesAtExit={target}")
        try:
            run(spark, JobOptions([str(store)], Path(work) / "out", quiet=True))
        finally:
            spark.stop()
    gateway = SparkContext._gateway
    proc = getattr(gateway, "proc", None)
    if proc is not None:
        proc.stdin.close()  # the JVM exits when its stdin closes, writing the archive
        proc.wait()


if __name__ == "__main__":
    _train(Path(sys.argv[1]))
