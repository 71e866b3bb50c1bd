#!/usr/bin/env bash
# Builds {{name}}.wasm: clang (wasm32-wasi, reactor) + `wit-bindgen c` +
# `wasm-tools component new` with the WASI preview-1 adapter of the host's
# wasmtime. Tools: see README.md (STOWAGE_CC, STOWAGE_WASI_ADAPTER).
set -euo pipefail
cd "$(dirname "$0")"
CC=${STOWAGE_CC:-clang-19}
ADAPTER=${STOWAGE_WASI_ADAPTER:?set STOWAGE_WASI_ADAPTER to wasi_snapshot_preview1.reactor.wasm (wasmtime 48)}
mkdir -p build
wit-bindgen c wit --world adapter --rename-world adapter_world --out-dir build/gen >/dev/null 2>&1
"$CC" --target=wasm32-wasi -mexec-model=reactor -O2 -Wall -Wextra -Werror -Wl,--strip-debug \
    -Ibuild/gen -I. -o build/core.wasm ./*.c build/gen/adapter_world.c build/gen/adapter_world_component_type.o
wasm-tools component new build/core.wasm --adapt "wasi_snapshot_preview1=$ADAPTER" -o {{name}}.wasm
echo "built $(pwd)/{{name}}.wasm"
