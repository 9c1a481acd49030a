# Quick start: `make demo` and `make test` each set up .venv on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: demo test e2e bench recall faults clean

$(STAMP): pyproject.toml
	@$(PYTHON) -c 'import sys; sys.exit(sys.version_info < (3, 11) and "hafiza needs Python >= 3.11")'
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -e '.[test]'
	touch $(STAMP)

demo: $(STAMP)
	$(VENV)/bin/hafiza demo

test: $(STAMP)
	$(PY) -m pytest --durations=15

# the real Claude Code, Codex, Gemini CLI and opencode, installed from npm at pinned versions into .cache/e2e
# (skipped, with the reason, when npm or the registry cannot be reached)
e2e: $(STAMP)
	HAFIZA_E2E=1 $(PY) -m pytest tests/e2e -rs

bench: $(STAMP)
	$(PY) bench/search_bench.py --save

recall: $(STAMP)
	$(PY) bench/recall.py --save

# kill -9 of imports, every write on a full tmpfs (root only; skipped otherwise), the fault tests
faults: $(STAMP)
	$(PY) bench/faults/run.py --save

clean:
	rm -rf $(VENV) build *.egg-info .pytest_cache
