#!/usr/bin/env bash
# Builds {{name}}.wasm with componentize-py (PyPI: `pip install componentize-py==0.25.1`).
set -euo pipefail
cd "$(dirname "$0")"
componentize-py -d wit -w adapter componentize app -o {{name}}.wasm
echo "built $(pwd)/{{name}}.wasm"
