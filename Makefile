# Two commands do everything on a fresh machine: `make run` and `make test`.
# tests/setup/test_makefile.py runs every install path below on each `make test`, with stand-ins
# for python, apt-get and sudo, so a broken install line fails the suite even where CI's machine
# already has what it would install.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
# What `make run` needs (the server alone) and what `make test` needs (the suite, the pipeline).
SERVER_STAMP := $(VENV)/.installed-server
SUITE_STAMP := $(VENV)/.installed-suite
# Debian packages the suite drives, as command:package: kcat, a real Prometheus and promtool,
# gcc (the slow/failing-disk tests build an LD_PRELOAD shim), a headless Chromium (the
# rebalance timeline page is tested in a real browser), and Burrow with the ZooKeeper it keeps
# its bookkeeping in (zookeeperd brings zookeeper's jar and zooinspector).
SYSTEM_DEPS := kcat:kcat prometheus:prometheus promtool:prometheus gcc:gcc chromium:chromium \
	Burrow:burrow zooinspector:zookeeperd
# pytest-xdist workers (tests/parallel.py says how the tests are spread over them). The suite
# mostly waits on servers and clients (run serially it keeps about one core of two busy), so
# twice as many workers as the two cores of a small machine: `make test PYTEST_WORKERS=2`.
PYTEST_WORKERS ?= 4
# pytest keeps the bytecode of what it imports (its rewritten test modules too) even where
# PYTHONDONTWRITEBYTECODE is set: otherwise each worker, and each server and client process the
# tests start, compiles every module again (a worker's collection takes 10 s of CPU instead of 4).
PYTEST := PYTHONDONTWRITEBYTECODE= $(PY) -m pytest

.PHONY: run test test-fast lint typecheck bench-codec clean system-deps suite-deps
# A recipe that fails leaves no half-made target behind (a venv whose creation broke off).
.DELETE_ON_ERROR:

$(PY):
	$(PYTHON) -m venv $(VENV)

# pip compiles what it installs one file at a time (half a minute for the suite's packages on a
# small machine); compileall does it on every core.
PIP_INSTALL := $(PY) -m pip install --quiet --no-compile
COMPILE := $(PY) -m compileall -q -j 0 $(VENV)/lib

$(SERVER_STAMP): pyproject.toml | $(PY)
	$(PIP_INSTALL) -e .
	$(COMPILE)
	touch $@

$(SUITE_STAMP): pyproject.toml | $(PY)
	$(PIP_INSTALL) -e '.[dev,pipeline]'
	$(COMPILE)
	touch $@ $(SERVER_STAMP)

# Installs the missing SYSTEM_DEPS with apt-get: directly as root, through sudo otherwise.
# `env` carries DEBIAN_FRONTEND past sudo and works the same when there is no sudo word.
system-deps:
	@missing=""; \
	for dep in $(SYSTEM_DEPS); do \
	  command -v "$${dep%%:*}" >/dev/null 2>&1 && continue; \
	  case " $$missing " in *" $${dep#*:} "*) ;; *) missing="$$missing $${dep#*:}" ;; esac; \
	done; \
	[ -z "$$missing" ] && exit 0; \
	if [ "$$(id -u)" = 0 ]; then sudo=""; \
	elif command -v sudo >/dev/null 2>&1; then sudo="sudo"; \
	else echo "system-deps: need root or sudo to install Debian packages:$$missing" >&2; exit 1; fi; \
	echo "system-deps: installing Debian packages:$$missing"; \
	$$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq && \
	$$sudo env DEBIAN_FRONTEND=noninteractive \
	  apt-get install -y -qq --no-install-recommends $$missing

run: $(SERVER_STAMP)
	$(PY) -m coordinator serve

# The suite's two installs run side by side (pip fetching and building the extras, apt-get the
# Debian packages), whether or not make itself was given -j.
suite-deps:
	@$(MAKE) --no-print-directory -j2 $(SUITE_STAMP) system-deps

# mypy (a minute of one core without its cache) checks the types while pytest runs, which leaves
# part of the second core idle; its report comes after pytest's, and either failing fails the
# target.
test: suite-deps
	$(PY) -m ruff check .
	@$(PY) -m mypy > $(VENV)/mypy.out 2>&1 & types=$$!; \
	echo "$(PYTEST) -q -n $(PYTEST_WORKERS)   (mypy beside it)"; \
	$(PYTEST) -q -n $(PYTEST_WORKERS); tests=$$?; \
	wait $$types; typed=$$?; \
	echo "$(PY) -m mypy"; cat $(VENV)/mypy.out; \
	[ $$tests -eq 0 ] && [ $$typed -eq 0 ]

test-fast: suite-deps
	$(PYTEST) -q -n $(PYTEST_WORKERS) -m 'not slow'

lint: $(SUITE_STAMP)
	$(PY) -m ruff check .

typecheck: $(SUITE_STAMP)
	$(PY) -m mypy

bench-codec: $(SERVER_STAMP)
	$(PY) -m coordinator bench codec

clean:
	rm -rf $(VENV) data
