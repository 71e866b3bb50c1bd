#!/usr/bin/env bash
# Tests the Python client (clients/python) against a real `stowage serve`.
#
# - venv: ${STOWAGE_PY_VENV:-<repo>/target/python-venv}, created when missing (with
#   ${PYTHON:-python3}); requirements-test.txt (exact pins) and the package (editable)
#   are installed into it.
# - binary: $STOWAGE_BIN, else <repo>/target/debug/stowage (built when missing).
# - then: python -m pytest -q clients/python/tests (from the repository root).
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
venv="${STOWAGE_PY_VENV:-$repo/target/python-venv}"
pip_flags=(--quiet --disable-pip-version-check)

if [ ! -x "$venv/bin/python" ]; then
    echo "ci.sh: creating the virtualenv $venv"
    "${PYTHON:-python3}" -m venv "$venv"
fi
"$venv/bin/python" -m pip install "${pip_flags[@]}" -r "$here/requirements-test.txt"
# hatchling and editables are pinned in requirements-test.txt: no isolated build env needed.
"$venv/bin/python" -m pip install "${pip_flags[@]}" --no-build-isolation --no-deps -e "$here"

if [ -z "${STOWAGE_BIN:-}" ]; then
    if [ ! -x "$repo/target/debug/stowage" ]; then
        echo "ci.sh: building target/debug/stowage"
        (cd "$repo" && flock /tmp/stowage-cargo.lock cargo build -p stowage-cli)
    fi
    export STOWAGE_BIN="$repo/target/debug/stowage"
fi

cd "$repo"
exec "$venv/bin/python" -m pytest -q clients/python/tests
