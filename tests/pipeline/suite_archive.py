"""One JVM class archive (:mod:`pipeline.jvm_archive`) for a whole run of the suite.

A training run costs a minute of CPU. The tests that need an archive (test_jvm_start.py's, the
bench's) share one, in a directory of its own under the run's base temporary directory: the
controller's under pytest-xdist (each worker's is ``<controller's>/popen-gwN``), so every
worker finds the same one. It is made by :func:`pipeline.jvm_archive.ensure`, whose lock on
that directory has a test that needs it while another worker trains wait for that run, and
removed when the run ends (:func:`remove`, from ``tests/conftest.py``; ~190 MB, not left in
pytest's kept temporary directories). Nothing here imports PySpark: the controller imports it.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

import pytest

DIRECTORY = "pipeline-jvm-archive"
NAME = "classes.jsa"


def _root(base: Path) -> Path:
    """The run's base temporary directory, from this process's."""
    return base.parent if os.environ.get("PYTEST_XDIST_WORKER") else base


_USED: set[Path] = set()
"""The archive directories this process named (a run without pytest-xdist removes these)."""


def path(factory: pytest.TempPathFactory) -> Path:
    """Where the run's archive is, or will be."""
    directory = _root(factory.getbasetemp()) / DIRECTORY
    _USED.add(directory)
    return directory / NAME


def remove(config: pytest.Config) -> None:
    """``pytest_unconfigure``: remove the run's archive, in the process that ends last: the
    pytest-xdist controller, once every worker is done (its base temporary directory is the
    workers' parent), or the one process of a run without it."""
    if hasattr(config, "workerinput"):
        return
    directories = set(_USED)
    factory: pytest.TempPathFactory | None = getattr(config, "_tmp_path_factory", None)
    if factory is not None and config.pluginmanager.has_plugin("dsession"):
        directories.add(factory.getbasetemp() / DIRECTORY)  # made when the workers started
    for directory in directories:
        shutil.rmtree(directory, ignore_errors=True)
