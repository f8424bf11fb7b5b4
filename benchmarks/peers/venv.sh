#!/usr/bin/env bash
# Build one peer's virtualenv for the peer benchmark: .venv-peers/<tool> from
# benchmarks/peers/requirements-<tool>.txt (every version pinned). `make peer-venvs` runs it
# for pandera, pointblank and soda; `make test` never needs these venvs.
#
# It never fails the caller: a venv that cannot be built leaves .venv-peers/<tool>.error
# (pip's last lines), and benchmarks/peer_bench.py prints that reason in the tool's row.
set -u
tool="$1"
py="${PY:-python3}"
root="${PEER_VENVS:-.venv-peers}"
req="benchmarks/peers/requirements-${tool}.txt"
venv="${root}/${tool}"
stamp="${venv}/.installed"
error="${root}/${tool}.error"
mkdir -p "$root"
if [ -f "$stamp" ] && [ "$stamp" -nt "$req" ]; then
  echo "peer venv ${tool}: up to date (${venv})"
  exit 0
fi
rm -rf "$venv" "$error"
log="$(mktemp)"
if "$py" -m venv "$venv" >"$log" 2>&1 \
  && "$venv/bin/pip" install -q --disable-pip-version-check -r "$req" >>"$log" 2>&1; then
  touch "$stamp"
  echo "peer venv ${tool}: built (${venv})"
else
  { echo "could not build ${venv} from ${req}:"; tail -n 5 "$log"; } >"$error"
  echo "peer venv ${tool}: FAILED, see ${error}" >&2
fi
rm -f "$log"
exit 0
