#!/usr/bin/env bash
# Run the Dagster or the Prefect example's test in its own virtual environment.
#
# Why separate venvs: each orchestrator brings a large, tightly pinned dependency tree
# (Dagster: grpcio, protobuf, alembic...; Prefect: its server, FastAPI, SQLAlchemy...)
# that must not decide the versions sluicegate's own tests run with. So .venv-dagster
# and .venv-prefect each hold the orchestrator, pytest and sluicegate (editable, with its
# dependencies), the way scripts/flink_venv.sh keeps PyFlink apart.
#
# Built once: a stamp records what was installed; later runs skip the install and go
# straight to the test (seconds). Delete .venv-<name> to start over.
#
# Usage: scripts/orchestrator_venv.sh dagster|prefect [extra pytest args...]
#        ORCHESTRATOR_VENV_SETUP_ONLY=1 scripts/orchestrator_venv.sh dagster
set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
NAME="${1:?usage: scripts/orchestrator_venv.sh dagster|prefect [pytest args...]}"
shift
case "$NAME" in
  dagster) PACKAGES=("dagster==1.13.*") ;;
  prefect) PACKAGES=("prefect==3.9.*") ;;
  *) echo "orchestrator_venv: unknown orchestrator '$NAME' (dagster or prefect)" >&2; exit 2 ;;
esac
VENV="$ROOT/.venv-$NAME"
PY="${PYTHON:-python3}"
# Bump when the package set (or sluicegate's dependencies) change, so venvs are refreshed.
STAMP_VERSION="1 ${PACKAGES[*]} pytest $(sha256sum "$ROOT/pyproject.toml" | cut -c1-16)"
STAMP="$VENV/.sluicegate-$NAME-stamp"

cd "$ROOT"

if [[ -f "$STAMP" && "$(cat "$STAMP")" == "$STAMP_VERSION" ]]; then
  echo "orchestrator_venv: $VENV is up to date (stamp found), skipping install" >&2
else
  start=$(date +%s)
  [[ -x "$VENV/bin/python" ]] || "$PY" -m venv "$VENV"
  "$VENV/bin/python" -m pip install --quiet --upgrade pip
  "$VENV/bin/python" -m pip install --quiet "${PACKAGES[@]}" pytest pytest-timeout -e .
  # Fail now, not in the middle of a test run, if the install is unusable.
  "$VENV/bin/python" -c "import $NAME, sluicegate; sluicegate.load"
  echo "$STAMP_VERSION" > "$STAMP"
  echo "orchestrator_venv: $NAME installed in $(( $(date +%s) - start )) s" >&2
fi

if [[ "${ORCHESTRATOR_VENV_SETUP_ONLY:-0}" == "1" ]]; then
  exit 0
fi

exec "$VENV/bin/python" -m pytest -m orchestrator "tests/orchestrators/test_$NAME.py" -q "$@"
