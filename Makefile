# Quick start: `make demo` and `make test` each set up .venv on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed-stamp

.PHONY: demo test e2e docs bench recall faults clean

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
# (skipped, with the reason, when npm or the registry cannot be reached); zsh and fish for the completion
# tests, from apt when missing (root; CI is); and `hafiza ui` in a real browser: Debian's chromium (from apt
# when missing) driven by Playwright from PyPI, which never downloads a browser of its own (the browser tests
# skip, with the reason, where chromium cannot be had)
e2e: $(STAMP)
	$(PY) -m pip install --quiet -e '.[e2e]'
	@command -v zsh >/dev/null && command -v fish >/dev/null || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq zsh fish >/dev/null; } || \
		echo "could not install zsh and fish; their completion tests will fail"
	@test -x /usr/bin/chromium || \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium >/dev/null; } || \
		echo "no /usr/bin/chromium (apt-get install chromium, as root): the browser tests of hafiza ui skip"
	HAFIZA_E2E=1 $(PY) -m pytest tests/e2e tests/test_completion.py -rs

# the documentation site into site/, the CLI reference first made anew from the parsers; strict: a broken
# link or anchor is an error (tests/test_docs.py builds it the same way)
docs: $(STAMP)
	$(PY) -m hafiza.cli.reference > docs/cli.md
	$(PY) -m mkdocs build --strict

bench: $(STAMP)
	$(PY) bench/search_bench.py --save

recall: $(STAMP)
	$(PY) bench/recall.py --save

# kill -9 of imports, every write on a full tmpfs (root only; skipped otherwise), the fault tests
faults: $(STAMP)
	$(PY) bench/faults/run.py --save

clean:
	rm -rf $(VENV) build dist site *.egg-info .pytest_cache
