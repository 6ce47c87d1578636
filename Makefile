# Two commands do everything on a fresh machine: `make run` and `make test`.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed

.PHONY: run test test-fast lint bench-codec clean system-deps

$(STAMP): pyproject.toml
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet -e '.[dev,pipeline]'
	touch $(STAMP)

# Debian packages the suite drives (kcat, a real Prometheus and promtool); installed with apt
# when missing.
system-deps:
	@missing=""; \
	command -v kcat >/dev/null 2>&1 || missing="$$missing kcat"; \
	command -v promtool >/dev/null 2>&1 || missing="$$missing prometheus"; \
	if [ -n "$$missing" ]; then \
	  SUDO=$$(command -v sudo >/dev/null 2>&1 && [ "$$(id -u)" != 0 ] && echo sudo); \
	  $$SUDO apt-get update -qq && \
	  $$SUDO DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends $$missing; \
	fi

run: $(STAMP)
	$(PY) -m coordinator serve

test: $(STAMP) system-deps
	$(PY) -m ruff check .
	$(PY) -m pytest -q

test-fast: $(STAMP)
	$(PY) -m pytest -q -m 'not slow'

lint: $(STAMP)
	$(PY) -m ruff check .

bench-codec: $(STAMP)
	$(PY) -m coordinator bench codec

clean:
	rm -rf $(VENV) data
