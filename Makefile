# Two entry points, both idempotent on a fresh clone: `make run` and `make test`.
PY ?= python3
VENV := .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed-$(shell cat pyproject.toml | cksum | cut -d' ' -f1)

.PHONY: run test lint bench clean postgres mysql chromium bytecode jvm

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install --quiet -e '.[test]'
	rm -f $(VENV)/.installed-* && touch $@

## The project's bytecode, written even where PYTHONDONTWRITEBYTECODE is set: every task
## process is a fresh interpreter, which otherwise compiles the sources it imports each
## time it starts (a tenth of a sink task's start-up). Up-to-date files are skipped.
bytecode: $(STAMP)
	$(BIN)/python -m compileall -q connect connectors log > /dev/null

## Install everything into .venv and run the main job on the embedded log.
run: $(STAMP) bytecode
	$(BIN)/python -m connect.demo

## Install what the tests need and run the whole suite (lint included).
test: $(STAMP) bytecode postgres mysql chromium jvm
	$(BIN)/ruff check .
	$(BIN)/python -m pytest --durations=30

## PostgreSQL's server binaries for the `postgres` tests (installed from Debian when missing).
postgres:
	scripts/ensure-postgres

## MariaDB's server binaries for the `mysql` tests (installed from Debian when missing).
mysql:
	scripts/ensure-mysql

## Headless Chromium and chromedriver for the `browser` tests and the console benchmark
## (installed from Debian when missing).
chromium:
	scripts/ensure-chromium

## The JVM engines the tests run beside the project (a Kafka broker, Kafka Connect,
## Debezium, Spark's Kafka package), pinned in pom.xml and copied by Maven into .jvm/
## once; a second run does no network work. `make run` never needs them.
jvm:
	scripts/ensure-jvm

lint: $(STAMP)
	$(BIN)/ruff check .

bench: $(STAMP) bytecode postgres mysql chromium jvm
	$(BIN)/python bench/log_bench.py
	$(BIN)/python bench/pipeline_bench.py
	$(BIN)/python bench/registry_bench.py
	$(BIN)/python bench/cdc_bench.py
	$(BIN)/python bench/s3_bench.py
	$(BIN)/python bench/lake_bench.py
	$(BIN)/python bench/ops_bench.py
	$(BIN)/python bench/cluster_bench.py
	$(BIN)/python bench/peers_bench.py
	$(BIN)/python bench/eos_bench.py
	$(BIN)/python bench/lakehouse_bench.py
	$(BIN)/python bench/mysql_cdc_bench.py
	$(BIN)/python bench/streams_bench.py

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache build *.egg-info test-artifacts
