# The two commands a newcomer runs: `make demo` and `make test`. Both set up .venv first.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: setup demo test compose-test lint bench clean

# torch goes in first and pinned: left to a dependency resolver, pip would pull a
# multi-GB CUDA build. The stamp reinstalls when pyproject.toml changes.
$(STAMP): pyproject.toml
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	$(BIN)/pip install --quiet torch==2.13.0
	$(BIN)/pip install --quiet -e '.[dev]'
	touch $(STAMP)

setup: $(STAMP)

demo: setup
	$(BIN)/atoll demo --out runs/demo

# Lint, the layers (import-linter, [tool.importlinter]) and types (mypy, [tool.mypy]; it
# reads the packages through links that tools/typecheck_tree.py makes), then the tests.
# Two pytest workers: most integration tests wait on processes, links and heartbeats, so
# two at once took 9 min here where one took 13. A module runs on one worker. The container
# The browser tests run in a process of their own: Playwright's sync API leaves its event
# loop marked running in the thread for the whole session, and any asyncio.run() a later
# test on that worker makes then fails. The Flower tests run alone too: Flower starts a
# process per message and expects its answer within 30 s, which a two-core host shared
# with other tests' processes did not always give. The fault tests that time how soon the
# control plane sees a killed agent run alone too, for the same reason. The container tests come after, alone: they build
# images and run seven containers.
test: setup
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .
	$(BIN)/lint-imports
	$(BIN)/python tools/typecheck_tree.py $(VENV)/typecheck
	$(BIN)/mypy
	$(BIN)/python -m pytest -n 2 --dist loadscope -m "not containers and not browser and not flower and not alone"
	$(BIN)/python -m pytest -p no:xdist -m alone
	$(BIN)/python -m pytest -p no:xdist -m flower
	$(BIN)/python -m pytest -p no:xdist -m browser tests/e2e
	$(MAKE) --no-print-directory compose-test

# The image built with podman from the Dockerfile, docker-compose.yml run with it, a job and
# faults in containers (tests/containers). Skips without podman; fails under CI=true.
compose-test: setup
	$(BIN)/python -m pytest -p no:xdist -m containers tests/containers

bench: setup
	$(BIN)/atoll bench site

clean:
	rm -rf $(VENV) runs bench/results
