//! Compiles the guest adapters (guest-adapters/, a separate workspace) to
//! wasm32-wasip2 components, once per build, into `<target>/wasm-guests`, then
//! precompiles the shipped ones for the host's engine into `OUT_DIR`. The host
//! embeds both (the component for its digest and description, the artifact to
//! run), so a shipped adapter is never compiled at run time; tests find the
//! fixtures through `STOWAGE_GUEST_DIR`.
//!
//! The build script links the same wasmtime the host does: the workspace uses
//! resolver 1 so a crate that is both a build and a normal dependency is built
//! once (see the workspace `Cargo.toml`).

#[path = "src/adapter/engine_settings.rs"]
mod engine_settings;

use std::env;
use std::fmt::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;

use sha2::{Digest, Sha256};

/// The shipped adapters, by the name of their component file.
const SHIPPED: [&str; 3] = ["sqlite", "filesystem", "null"];

/// Precompiles the shipped adapters in `guest_dir` into `out_dir`: per adapter,
/// `NAME.cwasm` (the artifact), `NAME.sha256` (the component's SHA-256, hex) and
/// `NAME.cwasm.blake3` (the artifact's BLAKE3, hex).
/// A cross build writes empty artifacts: the runtime compiles those adapters
/// once, as it would any other.
fn precompile(guest_dir: &Path, out_dir: &Path) {
    let native = env::var("TARGET").ok() == env::var("HOST").ok();
    let engine = native
        .then(|| wasmtime::Engine::new(&engine_settings::base_config()).expect("creating the precompiling engine"));
    for name in SHIPPED {
        let path = guest_dir.join(format!("stowage_adapter_{name}.wasm"));
        let wasm = std::fs::read(&path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
        let artifact = match &engine {
            Some(engine) => {
                engine.precompile_component(&wasm).unwrap_or_else(|e| panic!("precompiling {}: {e:#}", path.display()))
            }
            None => Vec::new(),
        };
        let sha256 = Sha256::digest(&wasm).iter().fold(String::new(), |mut hex, b| {
            let _ = write!(hex, "{b:02x}");
            hex
        });
        std::fs::write(out_dir.join(format!("{name}.sha256")), sha256).expect("writing an adapter digest");
        std::fs::write(out_dir.join(format!("{name}.cwasm.blake3")), blake3::hash(&artifact).to_hex().as_str())
            .expect("writing an artifact digest");
        std::fs::write(out_dir.join(format!("{name}.cwasm")), artifact).expect("writing a precompiled adapter");
    }
    println!("cargo:rustc-env=STOWAGE_PRECOMPILED_DIR={}", out_dir.display());
}

/// Adds the wasm32-wasip2 target when it is missing. `rust-toolchain.toml`
/// names it, but rustup only honours that when it installs the toolchain, not
/// for one that is already there; asking here keeps `cargo run`/`cargo test`
/// working on a fresh machine with nothing run before them.
fn ensure_wasm_target() {
    let rustc = env::var("RUSTC").unwrap_or_else(|_| "rustc".to_owned());
    let sysroot = Command::new(&rustc).args(["--print", "sysroot"]).output().ok();
    let installed = sysroot
        .filter(|out| out.status.success())
        .map(|out| PathBuf::from(String::from_utf8_lossy(&out.stdout).trim()))
        .is_some_and(|root| root.join("lib/rustlib/wasm32-wasip2").is_dir());
    if installed {
        return;
    }
    let mut rustup = Command::new("rustup");
    rustup.args(["target", "add", "wasm32-wasip2"]);
    if let Ok(toolchain) = env::var("RUSTUP_TOOLCHAIN") {
        rustup.args(["--toolchain", &toolchain]);
    }
    match rustup.status() {
        Ok(status) if status.success() => {}
        // The guest build below fails with rustc's own message and our hint.
        other => println!("cargo:warning=could not add the wasm32-wasip2 target with rustup: {other:?}"),
    }
}

fn main() {
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let root = manifest_dir.parent().expect("host/ lives in the workspace root").to_path_buf();
    let guests = root.join("guest-adapters");
    let target_dir =
        env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target")).join("wasm-guests");

    for watched in ["wit", "guest-adapters"] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }
    println!("cargo:rerun-if-env-changed=STOWAGE_PREBUILT_GUESTS");
    println!("cargo:rerun-if-changed={}", manifest_dir.join("src/adapter/engine_settings.rs").display());
    let out_dir = PathBuf::from(env::var_os("OUT_DIR").expect("set by cargo"));
    // Packagers (and a developer iterating on the host alone) may supply guests
    // built elsewhere: the directory holding the `.wasm` files.
    if let Some(prebuilt) = env::var_os("STOWAGE_PREBUILT_GUESTS") {
        let prebuilt = PathBuf::from(prebuilt);
        println!("cargo:rustc-env=STOWAGE_GUEST_DIR={}", prebuilt.display());
        precompile(&prebuilt, &out_dir);
        return;
    }

    ensure_wasm_target();
    let cargo = env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let mut command = Command::new(cargo);
    command
        .args(["build", "--release", "--target", "wasm32-wasip2", "--manifest-path"])
        .arg(guests.join("Cargo.toml"))
        .arg("--target-dir")
        .arg(&target_dir);
    // The outer build's flags and wrappers (clippy, coverage, host RUSTFLAGS) are for
    // the host target, not for the guests.
    for var in [
        "RUSTFLAGS",
        "CARGO_ENCODED_RUSTFLAGS",
        "RUSTC_WRAPPER",
        "RUSTC_WORKSPACE_WRAPPER",
        "CLIPPY_ARGS",
        "CARGO_BUILD_TARGET",
        "CARGO_TARGET_DIR",
        "CARGO_PRIMARY_PACKAGE",
    ] {
        command.env_remove(var);
    }
    // So are profile overrides (`CARGO_PROFILE_RELEASE_DEBUG=…` for a profiling
    // build): the guests keep their own profile, and the same `.wasm` whatever
    // the outer build's, or one build's precompiled digests would not match the
    // `.wasm` another build rewrote in the shared directory.
    for (var, _) in env::vars_os() {
        if var.to_str().is_some_and(|var| var.starts_with("CARGO_PROFILE_")) {
            command.env_remove(var);
        }
    }
    let status = command.status().expect("failed to run cargo for the guest adapters");
    if !status.success() {
        panic!(
            "building the guest adapters failed ({status}). If the error above mentions \
             wasm32-wasip2, install the target with `rustup target add wasm32-wasip2`."
        );
    }

    let out = target_dir.join("wasm32-wasip2").join("release");
    println!("cargo:rustc-env=STOWAGE_GUEST_DIR={}", out.display());
    precompile(&out, &out_dir);
}
