#!/usr/bin/env bash
# Builds the example adapters in C, JavaScript and Python into
# target/wasm-guests/examples/{c,js,python}.wasm and checks each one:
#
#   c       world sql-adapter   clang (wasm32-wasi, reactor) + `wit-bindgen c`
#                               + `wasm-tools component new --adapt` (preview-1 adapter)
#   js      world sql-adapter   componentize-qjs --sync
#   python  world adapter       componentize-py (stores in /data)
#
# Usage: guest-adapters/examples/build.sh [c] [js] [python]   (default: all three)
#
# Needs the toolchains of .ci/polyglot-toolchains.sh: it sources
# $STOWAGE_TOOLCHAINS/env.sh (default ~/.cache/stowage-toolchains).
#
# Checks, each fatal: the component validates; it exports
# stowage:store/conversation-store and display-store @0.2.0; every import is one
# the host links (stowage:store/*, wasi:cli|io|clocks|random|sockets/*, and
# wasi:filesystem/* or stowage:store/sql with a grant); the grants those imports
# need are among the example's declared grants (GRANTS below). It then prints
# the import list, the size and the build time.
#
# The componentize runs take the shared build lock $STOWAGE_BUILD_LOCK (default
# /tmp/stowage-cargo.lock; empty: none). Do not wrap this script in `flock`.
set -euo pipefail

here=$(cd "$(dirname "$0")" && pwd)
root=$(cd "$here/../.." && pwd)
wit="$root/wit/v0.2.0"
out="$root/target/wasm-guests/examples"
work="$out/build"
TOOLCHAINS="${STOWAGE_TOOLCHAINS:-$HOME/.cache/stowage-toolchains}"
LOCK="${STOWAGE_BUILD_LOCK-/tmp/stowage-cargo.lock}"

# The store grants each example's configuration will declare. The QuickJS runtime
# (wasi-libc) imports wasi:filesystem even though the JS example keeps its data in
# SQL, and the host links that interface only with the `filesystem` grant (no
# /data is needed: without a preopen the guest sees no directory at all).
declare -A GRANTS=([c]="sql" [js]="sql filesystem" [python]="filesystem")

die() {
    echo "examples/build.sh: FAILED: $*" >&2
    exit 1
}

[ -f "$TOOLCHAINS/env.sh" ] || die "no $TOOLCHAINS/env.sh: run .ci/polyglot-toolchains.sh first (or set STOWAGE_TOOLCHAINS)"
# shellcheck source=/dev/null
. "$TOOLCHAINS/env.sh"
for tool in "$STOWAGE_CC" wasm-tools wit-bindgen componentize-qjs componentize-py; do
    command -v "$tool" >/dev/null || die "$tool not found: run .ci/polyglot-toolchains.sh"
done
[ -f "$STOWAGE_WASI_ADAPTER" ] || die "WASI adapter $STOWAGE_WASI_ADAPTER missing: run .ci/polyglot-toolchains.sh"

# locked CMD...: runs CMD under the shared build lock (if any); build times
# include the wait, which is reported on stderr.
locked() {
    if [ -n "$LOCK" ]; then
        # shellcheck disable=SC2016 # expanded by the inner bash
        flock "$LOCK" bash -c 'waited=$(awk -v a="$1" -v b="$(date +%s.%N)" "BEGIN { printf \"%.1f\", b - a }")
            echo "    (waited ${waited}s for the build lock)" >&2; shift; exec "$@"' _ "$(date +%s.%N)" "$@"
    else
        "$@"
    fi
}
# quiet CMD...: runs CMD, showing its output only when it fails.
quiet() {
    local log
    log=$(mktemp)
    if "$@" >"$log" 2>&1; then
        grep '^    (waited ' "$log" >&2 || true
        rm -f "$log"
    else
        local rc=$?
        cat "$log" >&2
        rm -f "$log"
        return "$rc"
    fi
}
now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

build_c() {
    local dir="$work/c"
    rm -rf "$dir"
    mkdir -p "$dir"
    quiet wit-bindgen c "$wit" --world sql-adapter --out-dir "$dir/gen"
    # -mexec-model=reactor: a library with exports, no main. Release builds strip
    # debug info only (names stay, for readable traps).
    "$STOWAGE_CC" --target=wasm32-wasi -mexec-model=reactor -Oz -Wall -Wextra -Werror -Wl,--strip-debug \
        -I"$dir/gen" -I"$here/c" -o "$dir/core.wasm" \
        "$here"/c/*.c "$dir/gen/sql_adapter.c" "$dir/gen/sql_adapter_component_type.o"
    # The adapter is linked only if the module uses preview-1 (e.g. stdio);
    # otherwise it is dropped and the component imports no WASI at all.
    wasm-tools component new "$dir/core.wasm" --adapt "wasi_snapshot_preview1=$STOWAGE_WASI_ADAPTER" -o "$out/c.wasm"
}

build_js() {
    quiet locked componentize-qjs --wit "$wit" --world sql-adapter --js "$here/js/app.js" --sync -o "$out/js.wasm"
}

build_python() {
    local dir="$work/python"
    rm -rf "$dir"
    mkdir -p "$dir"
    # From a copy: componentize-py runs the app at build time and would leave
    # __pycache__ next to the sources.
    cp -r "$here/python" "$dir/src"
    (cd "$dir" && quiet locked componentize-py --wit-path "$wit" --world adapter componentize \
        --python-path "$dir/src" app -o "$out/python.wasm")
}

# capability_of IMPORT: prints the grant an import needs ("" = none); fails on
# an import the host never links.
capability_of() {
    local interface=${1%%@*}
    case "$interface" in
        stowage:store/types | stowage:store/log) echo "" ;;
        stowage:store/sql) echo "sql" ;;
        wasi:filesystem/*) echo "filesystem" ;;
        wasi:cli/* | wasi:io/* | wasi:clocks/* | wasi:random/* | wasi:sockets/*) echo "" ;;
        *) return 1 ;;
    esac
}

check() {
    local lang=$1 wasm="$out/$1.wasm"
    wasm-tools validate "$wasm" || die "$lang: $wasm does not validate"
    local world
    world=$(wasm-tools component wit "$wasm" | sed -n '/^world root {/,/^}/p')
    local imports exports
    imports=$(sed -n 's/^  import \([^;]*\);$/\1/p' <<<"$world")
    # `export a:b/c@1.0.0;` (an interface) or `export name: func(...)` / `export name: interface {`.
    exports=$(sed -n 's/^  export \([^ ;]*\);$/\1/p; s/^  export \([^ :]*\): .*$/\1/p' <<<"$world")
    for required in stowage:store/conversation-store@0.2.0 stowage:store/display-store@0.2.0; do
        grep -qxF "$required" <<<"$exports" || die "$lang: does not export $required"
    done
    local needed="" import capability
    while read -r import; do
        [ -n "$import" ] || continue
        capability=$(capability_of "$import") || die "$lang: imports $import, which the host does not link: it would fail to load"
        if [ -n "$capability" ] && [[ " $needed " != *" $capability "* ]]; then
            needed="${needed:+$needed }$capability"
        fi
    done <<<"$imports"
    for capability in $needed; do
        [[ " ${GRANTS[$lang]} " == *" $capability "* ]] \
            || die "$lang: its imports need the \`$capability\` grant, which its store does not declare (${GRANTS[$lang]})"
    done
    echo "    imports: $(tr '\n' ' ' <<<"$imports")"
    echo "    extra exports: $(grep -vxF -e stowage:store/conversation-store@0.2.0 -e stowage:store/display-store@0.2.0 <<<"$exports" | tr '\n' ' ')"
    echo "    grants needed: ${needed:-none} (declared: ${GRANTS[$lang]})"
}

langs=("$@")
[ ${#langs[@]} -gt 0 ] || langs=(c js python)
mkdir -p "$out" "$work"
for lang in "${langs[@]}"; do
    case "$lang" in c | js | python) ;; *) die "unknown example '$lang' (c, js, python)" ;; esac
    start=$(now)
    echo "==> $lang"
    "build_$lang" || die "$lang: build failed"
    took=$(elapsed "$start")
    check "$lang"
    echo "    $out/$lang.wasm: $(stat -c %s "$out/$lang.wasm") bytes, built in ${took}s"
done
