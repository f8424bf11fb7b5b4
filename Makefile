# sluicegate — `make help` lists the targets.
SHELL := /bin/bash
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
DEV_STAMP := $(VENV)/.installed-dev
SCALE ?= 1m
JARS := .jars/spark/.fetched
CHROMIUM ?= /usr/bin/chromium
KAFKA_JARS := .jars/kafka/.fetched
CDS := .jars/cds/driver.jsa
PEERS := pandera pointblank soda
# `make test` ends inside CI's 90 minutes on two cores: no Spark test starts later than 65
# minutes after the command began, nor after 3,000 s of Spark tests (tests/conftest.py);
# either can be set in the environment (SLUICEGATE_SPARK_DEADLINE in epoch seconds).
TEST_DEADLINE := $(shell echo $$(( $$(date +%s) + 65 * 60 )))

.DEFAULT_GOAL := help

help: ## Show this help
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  \033[36m%-12s\033[0m %s\n", $$1, $$2}' $(MAKEFILE_LIST)

$(BIN)/python:
	$(PY) -m venv $(VENV)
	$(BIN)/pip install -q --upgrade pip

$(STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e .
	@touch $@

$(DEV_STAMP): pyproject.toml | $(BIN)/python
	$(BIN)/pip install -q -e '.[dev,spark]'
	@touch $@ $(STAMP)

$(JARS): jvm/spark/pom.xml jvm/settings.xml
	@command -v mvn >/dev/null || { echo "mvn not found: install Maven (apt-get install maven) to fetch the Spark jars"; exit 2; }
	rm -rf .jars/spark  # a version changed in the pom must not leave its old jar on the classpath
	mvn -q -B -s jvm/settings.xml -f jvm/spark/pom.xml dependency:copy-dependencies
	@touch $@

# The report's browser test drives Debian's chromium (Playwright's own browser download
# does not work here); installed as root on a fresh machine, a no-op once it is there.
browser: ## Install Debian's chromium for the report's browser test (if missing)
	@if [ -x "$(CHROMIUM)" ]; then echo "browser: $(CHROMIUM) is installed"; \
	elif [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq chromium; \
	else echo "browser: $(CHROMIUM) missing; run as root: apt-get install -y chromium"; exit 2; fi

$(KAFKA_JARS): jvm/kafka/pom.xml jvm/settings.xml
	@command -v mvn >/dev/null || { echo "mvn not found: install Maven (apt-get install maven) to fetch the Kafka broker jars"; exit 2; }
	mvn -q -B -s jvm/settings.xml -f jvm/kafka/pom.xml dependency:copy-dependencies
	@touch $@

# One training run whose driver JVM archives the classes it loaded; local Spark sessions
# then map them instead of loading and verifying them again (engines/spark_cds.py). The
# archive records the class path, so it is rebuilt when the jars or how they are added change.
$(CDS): $(DEV_STAMP) $(JARS) scripts/spark_cds.py src/sluicegate/engines/spark_jars.py
	$(BIN)/python scripts/spark_cds.py --out $@

spark-cds: $(CDS) ## Build the JVM class archive local Spark sessions start from (one ~2 min training run)
kafka-jars: $(KAFKA_JARS) ## Fetch the Apache Kafka broker (KRaft) the Kafka tests and benchmark start, into .jars/kafka
jars: $(JARS) $(CDS) ## Fetch the JVM jars Spark sessions need (Delta, Iceberg, hadoop-aws, Kafka, JDBC) into .jars/, and build their class archive
install: $(STAMP) ## Create .venv and install sluicegate
dev: $(DEV_STAMP) ## Create .venv and install with the dev and spark extras

demo: $(STAMP) ## Generate a hostile sample feed and run the whole pipeline on DuckDB
	$(BIN)/sluicegate demo --dir .demo

test: $(DEV_STAMP) $(JARS) $(CDS) $(KAFKA_JARS) browser ## Run the whole test suite (layers, unit, DuckDB, browser, Spark, Kafka, Flink, Dagster, Prefect)
	$(BIN)/lint-imports
	$(BIN)/python scripts/import_graph.py
	$(BIN)/python -m pytest -m "not spark and not flink and not orchestrator" -q
	SLUICEGATE_SPARK_DEADLINE=$${SLUICEGATE_SPARK_DEADLINE-$(TEST_DEADLINE)} \
	SLUICEGATE_SPARK_BUDGET_S=$${SLUICEGATE_SPARK_BUDGET_S-3000} \
	$(BIN)/python -m pytest -m "spark" -q -rxXs --timeout 600 --durations=15
	bash scripts/flink_venv.sh
	bash scripts/orchestrator_venv.sh dagster
	bash scripts/orchestrator_venv.sh prefect

test-fast: $(DEV_STAMP) ## Unit and DuckDB tests only
	$(BIN)/python -m pytest -m "not spark and not flink and not orchestrator and not slow" -q

report-screenshot: $(DEV_STAMP) browser ## Refresh docs/report-retail.png (the retail demo's report in Chromium)
	SLUICEGATE_SCREENSHOT=docs/report-retail.png $(BIN)/python -m pytest -q tests/report/test_report_browser.py

lint: $(DEV_STAMP) ## ruff check and format check, the import layers (import-linter; every import, function-level too)
	$(BIN)/ruff check src tests benchmarks scripts
	$(BIN)/ruff format --check src tests benchmarks scripts
	$(BIN)/lint-imports
	$(BIN)/python scripts/import_graph.py

format: $(DEV_STAMP) ## ruff format
	$(BIN)/ruff format src tests benchmarks
	$(BIN)/ruff check --fix src tests benchmarks

bench: $(DEV_STAMP) $(JARS) $(CDS) $(KAFKA_JARS) ## Benchmark vs the hand-written DuckDB and seed-style Spark pipelines, then the peers (SCALE=1m|5m|10m)
	$(BIN)/python benchmarks/run_bench.py --scale $(SCALE)
	$(BIN)/python benchmarks/many_rules.py --rules 60 250 1000
	$(BIN)/python benchmarks/kafka_latency.py
	$(BIN)/python benchmarks/watch_latency.py
	$(BIN)/python benchmarks/watch_latency.py --engine spark --files 5
	$(MAKE) --no-print-directory bench-peers SCALE=$(SCALE)

# Each peer in its own virtualenv (.venv-peers/<tool>, pinned in benchmarks/peers/); only the
# benchmark uses them. A venv that cannot be built is reported in its row, never fatal here.
peer-venvs: ## Build the peers' virtualenvs (pandera, pointblank, Soda Core) into .venv-peers/
	@for t in $(PEERS); do PY=$(PY) bash benchmarks/peers/venv.sh $$t; done

bench-peers: $(DEV_STAMP) peer-venvs ## pandera, pointblank, Soda and sluicegate on the same typed Parquet (SCALE=tiny|1m|5m)
	$(BIN)/python benchmarks/peer_bench.py --scale $(SCALE)

bench-compare: ## Print the last `make bench` run against the committed benchmarks/RESULTS.md table
	$(BIN)/python benchmarks/bench_compare.py

clean: ## Remove build and demo artefacts (keeps .venv)
	rm -rf .demo .pytest_cache .ruff_cache build dist src/*.egg-info

.PHONY: help browser report-screenshot jars spark-cds kafka-jars install dev demo test test-fast lint format bench bench-compare bench-peers peer-venvs clean
