#!/usr/bin/env bash
# Installs the pinned toolchains that build the C, JavaScript and Python example
# adapters (guest-adapters/examples, issue 14), from the package registries only:
#
#   C      Debian clang-19, lld-19, libclang-rt-19-dev-wasm32, wasi-libc (apt);
#          wit-bindgen-cli (C generator only) and wasm-tools (crates.io, built);
#          the WASI preview-1 reactor adapter of wasmtime 48.0.8 (crates.io, bytes only)
#   JS     componentize-qjs (npm; ships a prebuilt native binding)
#   Python componentize-py (PyPI wheel, hash-pinned)
#
# Everything except the Debian packages goes into one cache directory,
# $STOWAGE_TOOLCHAINS (default ~/.cache/stowage-toolchains), never into the repo.
# It writes $STOWAGE_TOOLCHAINS/env.sh, which guest-adapters/examples/build.sh
# sources.
#
# Guarantees:
# - Idempotent: a tool already present at its pinned version is not touched.
#   Warm, the whole script takes about a second.
# - Pinned: every version below is exact, and the adapter bytes and the
#   Python wheel are checked against SHA-256 sums.
# - Loud: any tool that cannot be installed or does not run ends the script
#   with a non-zero exit and a message naming it. Nothing is skipped silently.
#
# Heavy compiles (cargo install) take the shared build lock $STOWAGE_BUILD_LOCK
# (default /tmp/stowage-cargo.lock; set it empty to disable). The script takes
# that lock itself, so do not wrap it in `flock` on the same file: that would
# deadlock.
#
# Cold, on 2 cores, it takes about 5.5 minutes, almost all of it the two cargo
# builds (wasm-tools about 2 min, wit-bindgen-cli about 3 min).
set -euo pipefail

# --- pins -------------------------------------------------------------------
LLVM=19
APT_PACKAGES=("clang-$LLVM" "lld-$LLVM" "libclang-rt-$LLVM-dev-wasm32" wasi-libc)
WASM_TOOLS_VERSION=1.263.0
WASM_TOOLS_FEATURES=component,validate
WIT_BINDGEN_VERSION=0.61.0
WIT_BINDGEN_FEATURES=c
WASMTIME_VERSION=48.0.8 # must match the host's wasmtime
ADAPTER_CRATE=wasi-preview1-component-adapter-provider
ADAPTER_SHA256=134b86dc09c6b62077f2307b96fa8b83b94dc86737bc705ac3dbe27cb107b1f9
COMPONENTIZE_QJS_VERSION=0.4.5
COMPONENTIZE_PY_VERSION=0.25.1
# componentize_py-0.25.1-cp39-abi3-manylinux_2_28_x86_64.whl
COMPONENTIZE_PY_SHA256=8623cd8cab8453cb0cd8bf03f3c7103420d06f2f3d360186a280a70a1ca5e89f

TOOLCHAINS="${STOWAGE_TOOLCHAINS:-$HOME/.cache/stowage-toolchains}"
LOCK="${STOWAGE_BUILD_LOCK-/tmp/stowage-cargo.lock}"

# --- helpers ----------------------------------------------------------------
current_step="setup"
die() {
    echo "polyglot-toolchains: FAILED ($current_step): $*" >&2
    exit 1
}
on_exit() {
    local rc=$?
    [ "$rc" -eq 0 ] || echo "polyglot-toolchains: FAILED in step \"$current_step\" (exit $rc)" >&2
}
trap on_exit EXIT

now() { date +%s.%N; }
elapsed() { awk -v a="$1" -v b="$(now)" 'BEGIN { printf "%.1f", b - a }'; }

summary=()
# step NAME FUNCTION: runs FUNCTION, which sets $outcome, and records its time.
step() {
    current_step=$1
    local start
    start=$(now)
    echo "==> $1"
    outcome="?"
    "$2"
    local took
    took=$(elapsed "$start")
    echo "    $outcome (${took}s)"
    summary+=("$(printf '%-18s %7ss  %s' "$1" "$took" "$outcome")")
}

# locked CMD...: runs CMD under the shared build lock (if any), and says how long
# it waited for it (step times include that wait).
locked() {
    if [ -n "$LOCK" ]; then
        command -v flock >/dev/null || die "flock not found (util-linux); set STOWAGE_BUILD_LOCK= to build without the lock"
        # shellcheck disable=SC2016 # expanded by the inner bash
        flock "$LOCK" bash -c 'waited=$(awk -v a="$1" -v b="$(date +%s.%N)" "BEGIN { printf \"%.1f\", b - a }")
            echo "    (waited ${waited}s for the build lock)"; shift; exec "$@"' _ "$(now)" "$@"
    else
        "$@"
    fi
}

as_root() {
    if [ "$(id -u)" -eq 0 ]; then
        "$@"
    elif command -v sudo >/dev/null; then
        sudo "$@"
    else
        die "need root (or sudo) to run: $*"
    fi
}

# --- steps ------------------------------------------------------------------
apt_packages() {
    command -v dpkg-query >/dev/null || die "not a Debian system: install ${APT_PACKAGES[*]} by hand"
    local missing=()
    for pkg in "${APT_PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q 'install ok installed' || missing+=("$pkg")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        echo "    installing: ${missing[*]}"
        as_root apt-get update -qq || die "apt-get update failed"
        DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "${missing[@]}" \
            || die "apt-get install ${missing[*]} failed"
        outcome="installed"
    else
        outcome="already installed"
    fi
    outcome+=": clang-$LLVM $(dpkg-query -W -f='${Version}' "clang-$LLVM"), wasi-libc $(dpkg-query -W -f='${Version}' wasi-libc)"
    # Prove that the toolchain links a wasm32-wasi reactor (libc, crt1-reactor.o, compiler-rt).
    local probe
    probe=$(mktemp -d)
    printf '#include <stdlib.h>\n__attribute__((export_name("probe"))) int probe(int n) { void *p = malloc(n); free(p); return n + 1; }\n' >"$probe/probe.c"
    "clang-$LLVM" --target=wasm32-wasi -mexec-model=reactor -Oz -o "$probe/probe.wasm" "$probe/probe.c" \
        || die "clang-$LLVM cannot build a wasm32-wasi reactor (check wasi-libc and libclang-rt-$LLVM-dev-wasm32)"
    rm -rf "$probe"
}

# cargo_tool BIN CRATE VERSION FEATURES: cargo-installs CRATE into $TOOLCHAINS/bin.
cargo_tool() {
    local bin=$1 crate=$2 version=$3 features=$4
    local stamp="$TOOLCHAINS/stamps/$crate"
    if [ -x "$TOOLCHAINS/bin/$bin" ] && [ "$(cat "$stamp" 2>/dev/null)" = "$version $features" ] \
        && "$TOOLCHAINS/bin/$bin" --version 2>/dev/null | grep -qF " $version"; then
        outcome="already installed: $("$TOOLCHAINS/bin/$bin" --version)"
        return
    fi
    command -v cargo >/dev/null || die "cargo not found: install Rust (rustup) first"
    mkdir -p "$TOOLCHAINS/stamps"
    # A temporary target dir: never the workspace's (CARGO_TARGET_DIR unset).
    locked env -u CARGO_TARGET_DIR cargo install --quiet --locked --force --root "$TOOLCHAINS" \
        "$crate@$version" --no-default-features --features "$features" \
        || die "cargo install $crate@$version failed"
    "$TOOLCHAINS/bin/$bin" --version | grep -qF " $version" || die "$bin --version does not report $version"
    echo "$version $features" >"$stamp"
    outcome="built: $("$TOOLCHAINS/bin/$bin" --version) [features: $features]"
}
wasm_tools() { cargo_tool wasm-tools wasm-tools "$WASM_TOOLS_VERSION" "$WASM_TOOLS_FEATURES"; }
wit_bindgen() { cargo_tool wit-bindgen wit-bindgen-cli "$WIT_BINDGEN_VERSION" "$WIT_BINDGEN_FEATURES"; }

wasi_adapter() {
    local dest="$TOOLCHAINS/wasi-adapter/$WASMTIME_VERSION/wasi_snapshot_preview1.reactor.wasm"
    if [ -f "$dest" ] && echo "$ADAPTER_SHA256  $dest" | sha256sum --check --status; then
        outcome="already present: $ADAPTER_CRATE $WASMTIME_VERSION"
        return
    fi
    command -v cargo >/dev/null || die "cargo not found: install Rust (rustup) first"
    # The crate only ships the adapter's bytes: fetch it (no build) and unpack it.
    local tmp
    tmp=$(mktemp -d)
    mkdir -p "$tmp/fetch/src"
    touch "$tmp/fetch/src/lib.rs"
    printf '[package]\nname = "adapter-fetch"\nversion = "0.0.0"\nedition = "2021"\npublish = false\n[dependencies]\n%s = "=%s"\n' \
        "$ADAPTER_CRATE" "$WASMTIME_VERSION" >"$tmp/fetch/Cargo.toml"
    locked cargo fetch --quiet --manifest-path "$tmp/fetch/Cargo.toml" || die "cargo fetch $ADAPTER_CRATE@$WASMTIME_VERSION failed"
    local crate_file
    crate_file=$(find "${CARGO_HOME:-$HOME/.cargo}/registry/cache" -name "$ADAPTER_CRATE-$WASMTIME_VERSION.crate" -print -quit)
    [ -n "$crate_file" ] || die "$ADAPTER_CRATE-$WASMTIME_VERSION.crate not found in cargo's registry cache"
    tar -xzf "$crate_file" -C "$tmp" || die "cannot unpack $crate_file"
    local src="$tmp/$ADAPTER_CRATE-$WASMTIME_VERSION/artefacts/wasi_snapshot_preview1.reactor.wasm"
    echo "$ADAPTER_SHA256  $src" | sha256sum --check --status || die "SHA-256 of $src is not $ADAPTER_SHA256"
    mkdir -p "$(dirname "$dest")"
    cp "$src" "$dest"
    rm -rf "$tmp"
    outcome="fetched: $ADAPTER_CRATE $WASMTIME_VERSION ($(stat -c %s "$dest") B)"
}

componentize_qjs() {
    local dir="$TOOLCHAINS/node" bin="$TOOLCHAINS/node/node_modules/.bin/componentize-qjs"
    if ! command -v node >/dev/null || ! command -v npm >/dev/null; then
        die "node and npm are required (apt-get install nodejs npm)"
    fi
    local major
    major=$(node -p 'process.versions.node.split(".")[0]')
    [ "$major" -ge 18 ] || die "componentize-qjs needs node >= 18, found $(node --version)"
    if [ -x "$bin" ] && [ "$(node -p "require('$dir/node_modules/componentize-qjs/package.json').version" 2>/dev/null)" = "$COMPONENTIZE_QJS_VERSION" ] \
        && "$bin" --help >/dev/null 2>&1; then
        outcome="already installed: componentize-qjs $COMPONENTIZE_QJS_VERSION"
        return
    fi
    rm -rf "$dir"
    mkdir -p "$dir"
    printf '{ "private": true, "dependencies": { "componentize-qjs": "%s" } }\n' "$COMPONENTIZE_QJS_VERSION" >"$dir/package.json"
    (cd "$dir" && npm install --no-audit --no-fund --loglevel=error >/dev/null) || die "npm install componentize-qjs@$COMPONENTIZE_QJS_VERSION failed"
    # The native binding is an optional dependency: npm skips it silently when no
    # build exists for this platform. Running the CLI proves it is there.
    "$bin" --help >/dev/null 2>&1 \
        || die "componentize-qjs does not run: no prebuilt binding for $(uname -sm)? (found: $(find "$dir/node_modules/@andreiltd" -mindepth 1 -maxdepth 1 -printf '%f ' 2>/dev/null))"
    outcome="installed: componentize-qjs $COMPONENTIZE_QJS_VERSION (node $(node --version))"
}

componentize_py() {
    local venv="$TOOLCHAINS/venv"
    if "$venv/bin/componentize-py" --version 2>/dev/null | grep -qxF "componentize-py $COMPONENTIZE_PY_VERSION"; then
        outcome="already installed: componentize-py $COMPONENTIZE_PY_VERSION"
        return
    fi
    local python=${PYTHON:-python3}
    command -v "$python" >/dev/null || die "$python not found"
    rm -rf "$venv"
    "$python" -m venv "$venv" || die "$python -m venv failed (Debian: apt-get install python3-venv)"
    local req hash_args=()
    req=$(mktemp)
    if [ "$(uname -sm)" = "Linux x86_64" ]; then
        echo "componentize-py==$COMPONENTIZE_PY_VERSION --hash=sha256:$COMPONENTIZE_PY_SHA256" >"$req"
        hash_args=(--require-hashes)
    else
        echo "    note: no pinned wheel hash for $(uname -sm): installing componentize-py==$COMPONENTIZE_PY_VERSION by version only"
        echo "componentize-py==$COMPONENTIZE_PY_VERSION" >"$req"
    fi
    "$venv/bin/pip" install --quiet --disable-pip-version-check --no-deps --only-binary=:all: \
        ${hash_args[@]+"${hash_args[@]}"} -r "$req" \
        || die "pip install componentize-py==$COMPONENTIZE_PY_VERSION failed"
    rm -f "$req"
    "$venv/bin/componentize-py" --version | grep -qxF "componentize-py $COMPONENTIZE_PY_VERSION" \
        || die "componentize-py --version does not report $COMPONENTIZE_PY_VERSION"
    outcome="installed: componentize-py $COMPONENTIZE_PY_VERSION ($("$venv/bin/python" --version))"
}

write_env() {
    cat >"$TOOLCHAINS/env.sh" <<EOF
# Written by .ci/polyglot-toolchains.sh: the toolchains of the example adapters.
export STOWAGE_TOOLCHAINS="$TOOLCHAINS"
export PATH="$TOOLCHAINS/bin:$TOOLCHAINS/node/node_modules/.bin:$TOOLCHAINS/venv/bin:\$PATH"
export STOWAGE_CC="clang-$LLVM"
export STOWAGE_WASI_ADAPTER="$TOOLCHAINS/wasi-adapter/$WASMTIME_VERSION/wasi_snapshot_preview1.reactor.wasm"
EOF
    outcome="wrote $TOOLCHAINS/env.sh"
}

# --- main -------------------------------------------------------------------
total_start=$(now)
mkdir -p "$TOOLCHAINS"
echo "polyglot-toolchains: cache $TOOLCHAINS, lock ${LOCK:-none}"
step "debian packages" apt_packages
step "wasm-tools" wasm_tools
step "wit-bindgen" wit_bindgen
step "wasi adapter" wasi_adapter
step "componentize-qjs" componentize_qjs
step "componentize-py" componentize_py
step "env.sh" write_env
current_step="done"
echo "polyglot-toolchains: summary"
printf '  %s\n' "${summary[@]}"
echo "polyglot-toolchains: all toolchains ready in $(elapsed "$total_start")s ($(du -sh "$TOOLCHAINS" | cut -f1) in $TOOLCHAINS)"
