"""The Makefile's install paths, run for real by the real ``make`` against a copy of the
repository's Makefile, with stand-ins for everything they would install or run.

PATH holds only a temporary bin directory, so the machine's own kcat, prometheus, promtool, gcc,
chromium, Burrow, zooinspector, apt-get and sudo are hidden whatever the machine has. The
stand-ins record their argv:
apt-get also records the DEBIAN_FRONTEND it sees and whether it runs privileged (root per the
stand-in ``id``, whose ``-u`` answer each test picks, or through the stand-in sudo), fails as apt
does when it is not, and on ``install`` provides the packages' commands. The Python paths run with
``PYTHON=`` a stand-in whose ``-m venv`` makes ``.venv/bin/python`` a stand-in too.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
import sys
import textwrap
from collections.abc import Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import pytest

REPO = Path(__file__).resolve().parents[2]
MAKEFILE = REPO / "Makefile"
MAKE = shutil.which("make")  # resolved before any test narrows PATH (`make test` runs us)

# Debian package -> the commands it installs (what the Makefile's SYSTEM_DEPS expects).
PACKAGES = {"kcat": ("kcat",), "prometheus": ("prometheus", "promtool"), "gcc": ("gcc",),
            "chromium": ("chromium",), "burrow": ("Burrow",), "zookeeperd": ("zooinspector",)}
COMMANDS = frozenset(command for commands in PACKAGES.values() for command in commands)

# record FILE FIELD...: appends one line, the fields separated by tabs, in one write (mypy's
# and pytest's stand-ins run side by side, and their lines must not interleave).
RECORD = r"""
record() {
  file=$1; shift
  tab=$(printf '\t')
  line=$1; shift
  for arg in "$@"; do line="$line$tab$arg"; done
  printf '%s\n' "$line" >> "$file"
}
"""

APT_GET = RECORD + r"""
uid=$(id -u)
record @LOG@ "${DEBIAN_FRONTEND-unset}" "$uid" "${VIA_SUDO-no}" "$@"
if [ "$uid" != 0 ]; then
  echo "E: Could not open lock file /var/lib/dpkg/lock-frontend - open (13: Permission denied)" >&2
  exit 100
fi
if [ "$1" = "${APT_FAIL_ON-}" ]; then
  echo "E: apt-get $1 failed (stand-in told to fail)" >&2
  exit 100
fi
provide() {
  printf '#!/bin/sh\nexit 0\n' > @BIN@/"$1" && @CHMOD@ 755 @BIN@/"$1"
}
if [ "$1" = install ]; then
  shift
  for pkg in "$@"; do
    case $pkg in
      -*) ;;
      kcat) provide kcat ;;
      prometheus) provide prometheus; provide promtool ;;
      gcc) provide gcc ;;
      chromium) provide chromium ;;
      burrow) provide Burrow ;;
      zookeeperd) provide zooinspector ;;
      *) echo "E: Unable to locate package $pkg" >&2; exit 100 ;;
    esac
  done
fi
exit 0
"""

# Like sudo's env_reset, the caller's DEBIAN_FRONTEND does not get through; what it runs is
# privileged (the stand-in id answers 0) and knows it came through sudo.
SUDO = RECORD + r"""
record @LOG@ sudo "$@"
unset DEBIAN_FRONTEND
FAKE_UID=0
VIA_SUDO=yes
export FAKE_UID VIA_SUDO
exec "$@"
"""

ID = r"""
if [ "$#" = 1 ] && [ "$1" = -u ]; then
  echo "${FAKE_UID:?the test sets FAKE_UID}"
  exit 0
fi
echo "id stand-in: only 'id -u' is supported, got: $*" >&2
exit 2
"""

PYTHON = RECORD + r"""
record @LOG@ "$0" "$@"
if [ "$#" -ge 2 ] && [ "$1" = -m ] && [ "$2" = "${FAIL_MODULE-}" ]; then
  echo "$2 failed (stand-in told to fail)"
  exit 1
fi
if [ "$#" = 3 ] && [ "$1" = -m ] && [ "$2" = venv ]; then
  @MKDIR@ -p "$3/bin" && @CP@ @SELF@ "$3/bin/python" && @CHMOD@ 755 "$3/bin/python"
fi
exit 0
"""

NOOP = "exit 0\n"


def tool(name: str) -> str:
    path = shutil.which(name)
    assert path is not None, f"{name} is needed to build the stand-ins"
    return path


def write_script(path: Path, body: str, **paths: Path | str) -> None:
    text = "#!/bin/sh\n" + textwrap.dedent(body).lstrip("\n")
    for name, value in paths.items():
        text = text.replace(f"@{name}@", shlex.quote(str(value)))
    assert "@" not in text.replace("$@", ""), text  # every placeholder filled
    path.write_text(text)
    path.chmod(0o755)


def copy_makefile(root: Path) -> None:
    root.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(MAKEFILE, root / "Makefile")


def run_make(root: Path, env: dict[str, str], *args: str) -> subprocess.CompletedProcess[str]:
    assert MAKE is not None
    return subprocess.run([MAKE, "-s", *args], cwd=root, env=env, capture_output=True,
                          text=True, timeout=30, check=False)


def read_records(path: Path) -> list[tuple[str, ...]]:
    if not path.exists():
        return []
    return [tuple(line.split("\t")) for line in path.read_text().splitlines()]


# --- system-deps: apt-get as root, through sudo, or a clear failure -------------------------


@dataclass(frozen=True)
class AptCall:
    frontend: str
    uid: str
    via_sudo: str
    args: tuple[str, ...]


def read_apt_calls(log: Path) -> list[AptCall]:
    return [AptCall(r[0], r[1], r[2], r[3:]) for r in read_records(log)]


def add_apt_stand_ins(bin_dir: Path, apt_log: Path, sudo_log: Path | None) -> None:
    """apt-get, id and env (the real one) in bin_dir; sudo too unless sudo_log is None."""
    write_script(bin_dir / "apt-get", APT_GET, LOG=apt_log, BIN=bin_dir, CHMOD=tool("chmod"))
    write_script(bin_dir / "id", ID)
    (bin_dir / "env").symlink_to(tool("env"))
    if sudo_log is not None:
        write_script(bin_dir / "sudo", SUDO, LOG=sudo_log)


@dataclass
class Machine:
    root: Path
    bin: Path
    env: dict[str, str]
    apt_log: Path
    sudo_log: Path

    def make(self, *args: str) -> subprocess.CompletedProcess[str]:
        return run_make(self.root, self.env, *args)

    def apt_calls(self) -> list[AptCall]:
        return read_apt_calls(self.apt_log)

    def sudo_calls(self) -> list[tuple[str, ...]]:
        return [r[1:] for r in read_records(self.sudo_log)]


class NewMachine(Protocol):
    def __call__(self, *, uid: int, sudo: bool, present: Iterable[str],
                 apt_fail_on: str = "") -> Machine: ...


@pytest.fixture
def new_machine(tmp_path: Path) -> NewMachine:
    def build(*, uid: int, sudo: bool, present: Iterable[str],
              apt_fail_on: str = "") -> Machine:
        root, bin_dir, logs = tmp_path / "repo", tmp_path / "bin", tmp_path / "logs"
        copy_makefile(root)
        bin_dir.mkdir()
        logs.mkdir()
        machine = Machine(root, bin_dir, {}, logs / "apt-get.log", logs / "sudo.log")
        add_apt_stand_ins(bin_dir, machine.apt_log, machine.sudo_log if sudo else None)
        for command in present:
            write_script(bin_dir / command, NOOP)
        machine.env.update(PATH=str(bin_dir), FAKE_UID=str(uid), APT_FAIL_ON=apt_fail_on)
        return machine

    return build


# (commands already on PATH, the packages system-deps must ask for, in the Makefile's order)
CASES = {
    "nothing missing": (COMMANDS, []),
    "kcat missing": (COMMANDS - {"kcat"}, ["kcat"]),
    "prometheus and promtool missing": (COMMANDS - {"prometheus", "promtool"}, ["prometheus"]),
    "promtool missing": (COMMANDS - {"promtool"}, ["prometheus"]),
    "gcc missing": (COMMANDS - {"gcc"}, ["gcc"]),
    "chromium missing": (COMMANDS - {"chromium"}, ["chromium"]),
    "burrow missing": (COMMANDS - {"Burrow"}, ["burrow"]),
    "zookeeperd missing": (COMMANDS - {"zooinspector"}, ["zookeeperd"]),
    "all missing": (frozenset(), ["kcat", "prometheus", "gcc", "chromium", "burrow",
                                  "zookeeperd"]),
}
case_params = pytest.mark.parametrize(("present", "wanted"), list(CASES.values()),
                                      ids=list(CASES))


def requested_packages(calls: list[AptCall]) -> list[str]:
    return [arg for call in calls if call.args[:1] == ("install",)
            for arg in call.args[1:] if not arg.startswith("-")]


def assert_installed_privileged(calls: list[AptCall], wanted: list[str], via_sudo: str) -> None:
    if not wanted:
        assert calls == []
        return
    assert [call.args[0] for call in calls] == ["update", "install"]
    install = calls[1].args
    assert "-y" in install and "--no-install-recommends" in install, install
    assert requested_packages(calls) == wanted  # each once: prometheus not twice
    for call in calls:
        assert call.frontend == "noninteractive", call
        assert call.uid == "0", call
        assert call.via_sudo == via_sudo, call


@case_params
def test_root_runs_apt_get_directly(new_machine: NewMachine, present: Iterable[str],
                                    wanted: list[str]) -> None:
    machine = new_machine(uid=0, sudo=True, present=present)
    result = machine.make("system-deps")
    assert result.returncode == 0, result.stderr
    assert_installed_privileged(machine.apt_calls(), wanted, via_sudo="no")
    assert machine.sudo_calls() == []  # root does not go through sudo even where it exists
    if not wanted:
        assert result.stdout == ""


@case_params
def test_non_root_runs_apt_get_through_sudo(new_machine: NewMachine, present: Iterable[str],
                                            wanted: list[str]) -> None:
    machine = new_machine(uid=1000, sudo=True, present=present)
    result = machine.make("system-deps")
    assert result.returncode == 0, result.stderr
    assert_installed_privileged(machine.apt_calls(), wanted, via_sudo="yes")
    assert len(machine.sudo_calls()) == len(machine.apt_calls())


@case_params
@pytest.mark.parametrize("uid", [0, 1000], ids=["root", "non-root"])
def test_a_second_run_asks_for_nothing(new_machine: NewMachine, present: Iterable[str],
                                       wanted: list[str], uid: int) -> None:
    machine = new_machine(uid=uid, sudo=True, present=present)
    assert machine.make("system-deps").returncode == 0
    apt_calls, sudo_calls = machine.apt_calls(), machine.sudo_calls()
    assert {p.name for p in machine.bin.iterdir()} >= COMMANDS  # apt-get provided them
    again = machine.make("system-deps")
    assert again.returncode == 0, again.stderr
    assert again.stdout == again.stderr == ""
    assert machine.apt_calls() == apt_calls
    assert machine.sudo_calls() == sudo_calls


@case_params
def test_non_root_without_sudo_fails_naming_the_packages(new_machine: NewMachine,
                                                         present: Iterable[str],
                                                         wanted: list[str]) -> None:
    machine = new_machine(uid=1000, sudo=False, present=present)
    result = machine.make("system-deps")
    assert machine.apt_calls() == []
    if not wanted:  # nothing to install: no privileges needed
        assert result.returncode == 0, result.stderr
        return
    assert result.returncode != 0
    message = result.stderr.split("\n")[0]
    assert "root or sudo" in message, result.stderr
    for package in PACKAGES:
        assert (package in message) == (package in wanted), message


def test_a_failing_apt_get_update_fails_the_target(new_machine: NewMachine) -> None:
    machine = new_machine(uid=0, sudo=False, present=(), apt_fail_on="update")
    result = machine.make("system-deps")
    assert result.returncode != 0
    assert [call.args[0] for call in machine.apt_calls()] == ["update"]  # no install after it


# --- the venv and the two installs: the server alone, or the suite ---------------------------

VENV = "system python -m venv .venv"
COMPILE = "compileall -q -j 0 .venv/lib"
INSTALL_SERVER = ("pip install -e .", COMPILE)
INSTALL_SUITE = ("pip install -e .[dev,pipeline]", COMPILE)
SERVE = "coordinator serve"
LINT = "ruff check ."
TYPES_AND_TESTS = ("mypy", "pytest -q -n 4")  # side by side: in either order
CHECKS = [LINT, *TYPES_AND_TESTS]


def in_check_order(done: list[str]) -> list[str]:
    """What ``make test`` ran, with mypy and pytest (started together) in CHECKS' order."""
    tail = done[-2:]
    if sorted(tail) == sorted(TYPES_AND_TESTS):
        return [*done[:-2], *TYPES_AND_TESTS]
    return done


@dataclass
class Project:
    root: Path
    bin: Path
    python: Path
    log: Path
    apt_log: Path
    env: dict[str, str]
    seen: int = 0
    output: str = ""

    def make(self, target: str, fails: bool = False) -> list[str]:
        """Runs a target; returns what the stand-in pythons were asked to do meanwhile."""
        result = run_make(self.root, self.env, f"PYTHON={self.python}", target)
        assert (result.returncode != 0) == fails, result.stdout + result.stderr
        self.output = result.stdout
        records = read_records(self.log)
        new, self.seen = records[self.seen:], len(records)
        return [self.label(record) for record in new]

    def label(self, record: tuple[str, ...]) -> str:
        who, args = record[0], record[1:]
        if who == str(self.python):
            return " ".join(("system python", *args))
        assert who == ".venv/bin/python" and args[0] == "-m", record
        module, rest = args[1], args[2:]
        if module == "pip":
            assert rest[0] == "install" and "-e" in rest, record
            assert "--no-compile" in rest, record  # compileall does it, on every core
            return f"pip install -e {rest[rest.index('-e') + 1]}"
        return " ".join((module, *rest))

    def stamps(self) -> set[str]:
        return {p.name for p in (self.root / ".venv").glob(".installed-*")}

    def edit_pyproject(self) -> None:
        """pyproject.toml becomes newer than every stamp (the stamps move back, not the file
        forward, so a reinstall's fresh stamp is newer than pyproject.toml again)."""
        past = (self.root / "pyproject.toml").stat().st_mtime - 10
        for stamp in (self.root / ".venv").glob(".installed-*"):
            os.utime(stamp, (past, past))


@pytest.fixture
def project(tmp_path: Path) -> Project:
    root, bin_dir, fake = tmp_path / "repo", tmp_path / "bin", tmp_path / "python"
    copy_makefile(root)
    pyproject = root / "pyproject.toml"
    pyproject.write_text('[project]\nname = "stand-in"\n')
    an_hour_ago = pyproject.stat().st_mtime - 3600
    os.utime(pyproject, (an_hour_ago, an_hour_ago))
    bin_dir.mkdir()
    fake.mkdir()
    log, apt_log = tmp_path / "python.log", tmp_path / "apt-get.log"
    python = fake / "python3"
    write_script(python, PYTHON, LOG=log, SELF=python, MKDIR=tool("mkdir"), CP=tool("cp"),
                 CHMOD=tool("chmod"))
    for command in COMMANDS:  # system-deps finds them all and asks for nothing
        write_script(bin_dir / command, NOOP)
    add_apt_stand_ins(bin_dir, apt_log, None)  # for the test that hides kcat
    for command in ("touch", "cat"):  # the stamps, mypy's report; nothing else runs by PATH
        (bin_dir / command).symlink_to(tool(command))
    return Project(root, bin_dir, python, log, apt_log,
                   {"PATH": str(bin_dir), "FAKE_UID": "0", "APT_FAIL_ON": "", "FAIL_MODULE": ""})


def test_run_installs_the_server_alone_then_serves(project: Project) -> None:
    (project.bin / "kcat").unlink()  # the server does not need the suite's Debian packages
    assert project.make("run") == [VENV, *INSTALL_SERVER, SERVE]
    assert (project.root / ".venv" / "bin" / "python").is_file()
    assert project.stamps() == {".installed-server"}
    assert project.make("run") == [SERVE]
    assert read_apt_calls(project.apt_log) == []


@pytest.mark.parametrize("target", ["test", "test-fast"])
def test_the_suite_targets_install_the_missing_debian_packages(project: Project,
                                                               target: str) -> None:
    (project.bin / "kcat").unlink()
    project.make(target)
    assert requested_packages(read_apt_calls(project.apt_log)) == ["kcat"]


def test_test_installs_the_suite_then_lints_typechecks_and_tests(project: Project) -> None:
    assert in_check_order(project.make("test")) == [VENV, *INSTALL_SUITE, *CHECKS]
    assert project.stamps() == {".installed-server", ".installed-suite"}
    assert in_check_order(project.make("test")) == CHECKS


@pytest.mark.parametrize("failing", ["mypy", "pytest"])
def test_either_check_beside_the_other_failing_fails_test(project: Project, failing: str) -> None:
    project.make("test")
    project.env["FAIL_MODULE"] = failing
    # the other one still ran to its end, and the failure is shown (mypy's after pytest's)
    assert in_check_order(project.make("test", fails=True)) == CHECKS
    assert f"{failing} failed (stand-in told to fail)" in project.output


def test_test_fast_installs_the_suite_and_skips_slow_tests(project: Project) -> None:
    assert project.make("test-fast") == [VENV, *INSTALL_SUITE, "pytest -q -n 4 -m not slow"]
    assert project.make("test-fast") == ["pytest -q -n 4 -m not slow"]


def test_run_after_test_installs_nothing(project: Project) -> None:
    project.make("test")
    assert project.make("run") == [SERVE]


def test_test_after_run_installs_the_extras(project: Project) -> None:
    project.make("run")
    assert in_check_order(project.make("test")) == [*INSTALL_SUITE, *CHECKS]
    assert project.make("run") == [SERVE]


@pytest.mark.parametrize(("target", "install", "then"),
                         [("run", INSTALL_SERVER, [SERVE]), ("test", INSTALL_SUITE, CHECKS)])
def test_a_newer_pyproject_reinstalls(project: Project, target: str, install: tuple[str, ...],
                                      then: list[str]) -> None:
    project.make("test")  # both stamps
    project.edit_pyproject()
    assert in_check_order(project.make(target)) == [*install, *then]
    assert in_check_order(project.make(target)) == then


# --- the server's own imports need neither extra ---------------------------------------------

EXTRAS = ("confluent_kafka", "aiokafka", "pyspark", "pandas", "matplotlib", "pyarrow", "pytest",
          "hypothesis")

IMPORT_CHECK = """
import importlib
import importlib.abc
import sys

blocked = set(sys.argv[1:])
early = sorted(blocked & {name.partition(".")[0] for name in sys.modules})
assert not early, f"imported at startup, before they could be blocked: {early}"


class Block(importlib.abc.MetaPathFinder):
    def find_spec(self, name, path=None, target=None):
        if name.partition(".")[0] in blocked:
            raise ImportError(f"{name} belongs to an extra (blocked)", name=name)
        return None


sys.meta_path.insert(0, Block())
try:
    import pytest
except ImportError:
    pass
else:
    raise SystemExit("the blocker does not block")
for module in ("coordinator.app", "coordinator.cli"):
    importlib.import_module(module)
print("imported")
"""


@pytest.mark.slow
def test_the_server_imports_without_the_dev_and_pipeline_extras() -> None:
    # `make run` installs the server alone: `python -m coordinator serve` must not need them.
    result = subprocess.run([sys.executable, "-c", IMPORT_CHECK, *EXTRAS], cwd=REPO,
                            capture_output=True, text=True, timeout=60, check=False)
    assert result.returncode == 0 and result.stdout == "imported\n", result.stderr
