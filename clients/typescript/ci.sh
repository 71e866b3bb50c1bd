#!/usr/bin/env bash
# CI for the TypeScript client: install exactly the locked dependencies, compile,
# make sure there is a `stowage` binary to test against, run the tests (which
# start real `stowage serve` processes).
#
#   clients/typescript/ci.sh                  # builds target/debug/stowage if missing
#   STOWAGE_BIN=/path/to/stowage clients/typescript/ci.sh
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
repo="$(cd "$here/../.." && pwd)"
cd "$here"

npm ci --no-audit --no-fund
npm run build

if [[ -z "${STOWAGE_BIN:-}" ]]; then
  if [[ ! -x "$repo/target/debug/stowage" ]]; then
    echo "ci.sh: no $repo/target/debug/stowage; building it" >&2
    (cd "$repo" && flock /tmp/stowage-cargo.lock cargo build -p stowage-cli)
  fi
  export STOWAGE_BIN="$repo/target/debug/stowage"
fi
echo "ci.sh: testing against $STOWAGE_BIN" >&2

npm test
