//! Compiles the guest adapters (guest-adapters/, a separate workspace) to
//! wasm32-wasip2 components, once per build, into `<target>/wasm-guests`.
//! The host embeds the shipped adapters; tests find the fixtures through
//! `STOWAGE_GUEST_DIR`.

use std::env;
use std::path::PathBuf;
use std::process::Command;

fn main() {
    let manifest_dir = PathBuf::from(env::var_os("CARGO_MANIFEST_DIR").expect("set by cargo"));
    let root = manifest_dir.parent().expect("host/ lives in the workspace root").to_path_buf();
    let guests = root.join("guest-adapters");
    let target_dir =
        env::var_os("CARGO_TARGET_DIR").map(PathBuf::from).unwrap_or_else(|| root.join("target")).join("wasm-guests");

    for watched in ["wit", "guest-adapters"] {
        println!("cargo:rerun-if-changed={}", root.join(watched).display());
    }

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
    let status = command.status().expect("failed to run cargo for the guest adapters");
    if !status.success() {
        panic!(
            "building the guest adapters failed ({status}). If the error above mentions \
             wasm32-wasip2, install the target with `rustup target add wasm32-wasip2`."
        );
    }

    let out = target_dir.join("wasm32-wasip2").join("release");
    println!("cargo:rustc-env=STOWAGE_GUEST_DIR={}", out.display());
}
