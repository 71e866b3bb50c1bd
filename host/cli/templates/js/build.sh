#!/usr/bin/env bash
# Builds {{name}}.wasm with componentize-qjs (npm: `npm install componentize-qjs@0.4.5`).
set -euo pipefail
cd "$(dirname "$0")"
componentize-qjs --wit wit --world sql-adapter --js app.js --sync -o {{name}}.wasm
