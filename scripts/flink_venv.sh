#!/usr/bin/env bash
# Run the PyFlink tests in their own virtual environment.
#
# Why a separate venv: apache-flink pins pyarrow<21 and pandas<2.3, which
# cannot coexist with the pyarrow that DuckDB and the rest of sluicegate use.
# So .venv-flink holds PyFlink, pytest and sqlglot, and sluicegate is
# installed editable with --no-deps (the Flink tests only need sluicegate.sql,
# which depends on sqlglot alone).
#
# Idempotent: a stamp file records what was installed; a second run skips the
# install and goes straight to the tests. Delete .venv-flink to start over.
#
# Usage: scripts/flink_venv.sh [extra pytest args...]
#        FLINK_VENV_SETUP_ONLY=1 scripts/flink_venv.sh   # install, no tests
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="${FLINK_VENV:-$ROOT/.venv-flink}"
PY="${PYTHON:-python3}"
# Bump when the package set below changes, so existing venvs are refreshed.
STAMP_VERSION="1 apache-flink==2.3.* sqlglot>=30.30,<31 pytest"
STAMP="$VENV/.sluicegate-flink-stamp"

cd "$ROOT"

if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$STAMP_VERSION" ]]; then
  echo "flink_venv: $VENV is up to date (stamp found), skipping install" >&2
else
  start=$(date +%s)
  [[ -x "$VENV/bin/python" ]] || "$PY" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --upgrade pip
  "$VENV/bin/python" -m pip install --quiet "apache-flink==2.3.*" "sqlglot>=30.30,<31" pytest
  "$VENV/bin/python" -m pip install --quiet --no-deps -e .
  # Fail now, not in the middle of a test run, if the install is unusable.
  "$VENV/bin/python" -c "import pyflink, sqlglot, sluicegate.sql"
  echo "$STAMP_VERSION" > "$STAMP"
  echo "flink_venv: installed in $(( $(date +%s) - start )) s" >&2
fi

if [[ "${FLINK_VENV_SETUP_ONLY:-0}" == "1" ]]; then
  exit 0
fi

exec "$VENV/bin/python" -m pytest -m flink tests/flink -q "$@"
