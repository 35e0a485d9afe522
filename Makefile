# Two commands do everything, each with its own set-up (see README.md):
#   make run   - set up (venv, Redis, Lean when possible) and start the whole stack
#   make test  - set up, then lint, format check, type check and the full test suite
SHELL := /bin/bash
VENV := .venv
BIN := $(VENV)/bin
# Outside CI `make test` also provisions Lean (best effort); CI skips it (tests never need it).
TEST_BOOTSTRAP_FLAGS := $(if $(filter true 1,$(CI)),,--lean)

.PHONY: run test bootstrap lint typecheck pytest

run:
	@scripts/bootstrap.sh --lean
	@$(BIN)/sorryless run

test:
	@scripts/bootstrap.sh $(TEST_BOOTSTRAP_FLAGS)
	$(MAKE) --no-print-directory lint typecheck pytest

bootstrap:
	@scripts/bootstrap.sh

lint:
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck:
	$(BIN)/mypy

pytest:
	$(BIN)/pytest -q
