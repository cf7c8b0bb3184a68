# The two commands a new user needs: `make demo` and `make test`. Both set up first.
.PHONY: setup demo test lint typecheck unit bench clean

VENV := .venv/bin

setup:
	@scripts/setup.sh

demo: setup
	$(VENV)/cleanroom demo

test: setup lint typecheck
	$(VENV)/pytest

lint:
	$(VENV)/ruff check src tests bench
	$(VENV)/ruff format --check src tests bench

typecheck:
	$(VENV)/mypy

unit:
	$(VENV)/pytest tests/unit

bench: setup
	$(VENV)/python bench/token_scan.py
	$(VENV)/python bench/verify_server_load.py
	$(VENV)/python bench/verify_modes.py
	$(VENV)/python bench/environments.py
	$(VENV)/python bench/run_loop.py

clean:
	rm -rf .venv build .pytest_cache .mypy_cache .ruff_cache
