# The two commands a new user needs: `make demo` and `make test`. Both set up first.
.PHONY: setup setup-integrations demo test test-integrations lint typecheck docs unit bench soak clean

VENV := .venv/bin

setup:
	@scripts/setup.sh

# `make setup`, and the environments of the integrations too large for `make test`
# (verifiers, verl, TRL: a torch stack each).
setup-integrations:
	@scripts/setup.sh --integrations

demo: setup
	$(VENV)/cleanroom demo

# Two workers: the desktop tests one after another on one, the rest beside them
# (tests/conftest.py).
test: setup lint typecheck docs
	$(VENV)/pytest -n 2 --dist loadgroup -m "not integrations"
	.venv-osworld/bin/python -m pytest -q -p no:cacheprovider -n 2 tests/differential/osworld

# What `make test` samples, in full (every attack of the state and runner classes through
# Harbor), the adapters for verifiers, verl and TRL, each in its library's own code, and
# the long cluster runs (`cleanroom run --ray` on two nodes, the node-loss cases).
test-integrations: setup-integrations
	$(VENV)/pytest -n 2 --dist loadgroup -m integrations --ignore=tests/differential

lint:
	$(VENV)/ruff check src tests bench soak examples
	$(VENV)/ruff format --check src tests bench soak examples
	$(VENV)/lint-imports

typecheck:
	$(VENV)/mypy

# The documentation site (mkdocs.yml): --strict fails on a broken link, a missing page or a
# stale name; the reference pages are made from the code at every build.
docs:
	NO_MKDOCS_2_WARNING=1 $(VENV)/mkdocs build --strict --quiet

unit:
	$(VENV)/pytest tests/unit

bench: setup
	$(VENV)/python bench/token_scan.py
	$(VENV)/python bench/verify_server_load.py
	$(VENV)/python bench/verify_modes.py
	$(VENV)/python bench/runner_witness.py
	$(VENV)/python bench/verify_parallel.py
	$(VENV)/python bench/sandbox.py
	$(VENV)/python bench/environments.py
	$(VENV)/python bench/run_loop.py
	$(VENV)/python bench/audit.py
	$(VENV)/python bench/cluster_merge.py
	$(VENV)/python bench/cluster_run.py
	$(VENV)/python bench/harbor_verifier.py
	$(VENV)/python bench/osworld_interface.py
	$(VENV)/python bench/apps.py

# An hour of `cleanroom soak`, checked from outside (CLEANROOM_SOAK_HOURS etc.: soak/test_soak.py).
soak: setup
	$(VENV)/pytest soak -p no:cacheprovider -s

clean:
	rm -rf .venv build .pytest_cache .mypy_cache .ruff_cache
