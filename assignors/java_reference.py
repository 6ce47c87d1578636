"""``bench assignor --java``: Kafka's own Java assignor on the same input, in the same run.

Kafka's ``UniformAssignor`` / ``RangeAssignor`` and what they need (the group-coordinator-api
interfaces, a few group-coordinator and server-common classes, kafka-clients' ``Uuid``) are
compiled with ``javac -sourcepath`` from apache/kafka's sources (javac compiles only the
classes the harness reaches), together with our harness ``assignors/java/KafkaAssignorBench.java``
(its own ``GroupSpec`` and ``SubscribedTopicDescriber`` over the input file, a warm-up, then
the timed runs). The sources come from ``--kafka-source`` (a checkout, or a bare git
repository whose ``HEAD`` is archived), else ``KAFKA_SOURCE``: apache/kafka's sources, brought
by the user (nothing is downloaded); the classes are cached per source revision in
``~/.cache/coordinator-bench``. slf4j's API (Kafka's assignors log through it) is taken from
PySpark's jars (the ``pipeline`` extra).

Both sides time the same input: the spec the Python bench times is written out (topics with
their partition counts, members with their subscriptions and current assignment, Kafka's
base64 topic ids); the harness reads it and prints the SHA-256 of the input as it parsed it,
which must be the file's.
"""

from __future__ import annotations

import base64
import hashlib
import importlib.util
import json
import os
import shutil
import subprocess
import tarfile
import tempfile
from io import BytesIO
from pathlib import Path
from typing import Any

from assignors.spec import AssignmentSpec

HARNESS = Path(__file__).resolve().parent / "java" / "KafkaAssignorBench.java"
SOURCE_ROOTS = ("clients/src/main/java", "group-coordinator/src/main/java",
                "group-coordinator/group-coordinator-api/src/main/java",
                "server-common/src/main/java")
CACHE = Path(os.environ.get("XDG_CACHE_HOME", Path.home() / ".cache")) / "coordinator-bench"
WARMUP_SECONDS = 3.0


def kafka_uuid(value: Any) -> str:
    """A topic id as Kafka prints it (``Uuid.toString``: URL-safe base64, no padding)."""
    return base64.urlsafe_b64encode(value.bytes).rstrip(b"=").decode()


def input_text(spec: AssignmentSpec) -> str:
    """The harness's input for ``spec`` (see ``KafkaAssignorBench.java``)."""
    ids = [kafka_uuid(t) for t in spec.topic_ids]
    lines = [f"topic {tid} {n}" for tid, n in zip(ids, spec.partition_counts, strict=True)]
    for m, member_id in enumerate(spec.member_ids):
        subscribed = spec.subscriptions[spec.member_subscriptions[m]]
        held = [f"{ids[t]}:{','.join(map(str, ps))}"
                for t, ps in zip(spec.current_topics[m], spec.current_partitions[m],
                                 strict=True) if ps]
        lines.append(f"member {member_id} {','.join(ids[t] for t in subscribed) or '-'} "
                     f"{';'.join(held) or '-'}")
    return "".join(line + "\n" for line in lines)


def _slf4j() -> Path:
    found = importlib.util.find_spec("pyspark")
    jars = sorted(Path(next(iter(found.submodule_search_locations or []))).glob(
        "jars/slf4j-api-*.jar")) if found is not None else []
    if not jars:
        raise SystemExit("bench assignor --java needs slf4j's API jar: install the pipeline "
                         "extra (pip install -e '.[pipeline]'), whose PySpark ships it")
    return jars[-1]


def _sources(source: str | None, into: Path) -> tuple[Path, str]:
    """A directory with Kafka's source roots, and the revision they are of."""
    source = source or os.environ.get("KAFKA_SOURCE")
    if source is None:
        raise SystemExit("bench assignor --java needs apache/kafka's sources: give "
                         "--kafka-source DIR (a checkout or a bare git repository) or set "
                         "KAFKA_SOURCE")
    path = Path(source)
    work_tree = (path / SOURCE_ROOTS[0]).is_dir()
    git = ["git", "-C", str(path)] if work_tree else ["git", f"--git-dir={path}"]
    revision = subprocess.run([*git, "rev-parse", "HEAD"], capture_output=True, text=True,
                              check=False).stdout.strip() or "unknown"
    if work_tree:
        return path, revision
    archive = subprocess.run([*git, "archive", "HEAD", *SOURCE_ROOTS], capture_output=True,
                             check=True).stdout
    with tarfile.open(fileobj=BytesIO(archive)) as tar:
        tar.extractall(into, filter="data")
    return into, revision


def compiled(source: str | None = None) -> tuple[Path, str]:
    """The directory of the compiled harness and Kafka classes (made once per revision and
    harness), and the Kafka revision."""
    harness = hashlib.sha256(HARNESS.read_bytes()).hexdigest()[:12]
    with tempfile.TemporaryDirectory(prefix="kafka-src-") as tmp:
        root, revision = _sources(source, Path(tmp))
        classes = CACHE / f"kafka-assignors-{revision[:12]}-{harness}"
        if not (classes / "KafkaAssignorBench.class").exists():
            building = classes.with_name(classes.name + ".tmp")
            shutil.rmtree(building, ignore_errors=True)
            building.mkdir(parents=True)
            subprocess.run(["javac", "-nowarn", "-d", str(building), "-cp", str(_slf4j()),
                            "-sourcepath", os.pathsep.join(str(root / r) for r in SOURCE_ROOTS),
                            str(HARNESS)], check=True)
            shutil.rmtree(classes, ignore_errors=True)
            building.rename(classes)
    return classes, revision


def time_java(spec: AssignmentSpec, assignor: str, runs: int, source: str | None = None
              ) -> dict[str, Any]:
    """Kafka's ``assignor`` (uniform or range) on ``spec``: the harness's JSON (min, median,
    samples in ms), the Kafka revision, and the input's digest, checked."""
    classes, revision = compiled(source)
    text = input_text(spec)
    digest = hashlib.sha256(text.encode()).hexdigest()
    with tempfile.NamedTemporaryFile("w", suffix=".txt", prefix="assignor-input-") as file:
        file.write(text)
        file.flush()
        done = subprocess.run(
            ["java", "-cp", os.pathsep.join([str(classes), str(_slf4j())]),
             "KafkaAssignorBench", file.name, assignor, str(runs), str(WARMUP_SECONDS)],
            capture_output=True, text=True, check=True)
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    if result["input_sha256"] != digest:
        raise AssertionError(f"the Java harness read another input: {result['input_sha256']} "
                             f"!= {digest}")
    result["kafka_revision"] = revision
    return result
