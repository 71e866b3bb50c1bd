//! `stowage new-adapter` writes adapters that build and pass `stowage check` out
//! of the box: always the Rust one; the C, JavaScript and Python ones with the
//! toolchains `.ci/polyglot-toolchains.sh` installs (in `$STOWAGE_TOOLCHAINS`,
//! default `~/.cache/stowage-toolchains`). Without a toolchain that language's
//! test says so and passes, unless `STOWAGE_REQUIRE_POLYGLOT=1` (CI), where it
//! fails.
//!
//! The builds run under the caller's build lock, like `host/build.rs`'s guest
//! build: wrap `cargo test` in `flock /tmp/stowage-cargo.lock`, never these
//! commands (a nested lock on the same file would deadlock). The Rust build
//! shares the guest target directory and the guest workspace's `Cargo.lock`, so
//! its dependencies are already compiled; `stowage check` shares one on-disk
//! cache of compiled components across runs.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

use anyhow::{Context, bail, ensure};

/// The workspace's target directory (`CARGO_TARGET_TMPDIR` is `<target>/tmp`).
fn target_dir() -> PathBuf {
    let tmp = Path::new(env!("CARGO_TARGET_TMPDIR"));
    tmp.parent().unwrap_or(tmp).to_path_buf()
}

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

fn stowage() -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_stowage"));
    command.env("STOWAGE_CACHE_DIR", target_dir().join("wasm-guests").join("compiled"));
    command.env_remove("STOWAGE_CONFIG").env_remove("STOWAGE_STORE");
    command
}

fn succeeded(what: &str, output: Output) -> anyhow::Result<String> {
    let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
    let stderr = String::from_utf8_lossy(&output.stderr);
    ensure!(output.status.success(), "{what} failed ({}):\n{stdout}\n{stderr}", output.status);
    Ok(stdout)
}

/// Writes the `lang` scaffold into a new directory `name` under `parent`.
fn scaffold(lang: &str, parent: &Path, name: &str) -> anyhow::Result<PathBuf> {
    let dir = parent.join(name);
    let output = stowage().args(["new-adapter", "--lang", lang]).arg(&dir).output()?;
    succeeded(&format!("stowage new-adapter --lang {lang}"), output)?;
    Ok(dir)
}

/// Runs `stowage check` on `wasm`; every applicable case must pass.
fn check(wasm: &Path) -> anyhow::Result<()> {
    let report = succeeded(&format!("stowage check {}", wasm.display()), stowage().arg("check").arg(wasm).output()?)?;
    println!("{report}");
    ensure!(report.contains(" passed, 0 failed, "), "unexpected report:\n{report}");
    Ok(())
}

#[test]
fn rust_scaffold_builds_and_passes_check() -> anyhow::Result<()> {
    let scratch = tempfile::tempdir()?;
    let dir = scaffold("rust", scratch.path(), "scaffold-test-rust")?;
    // The same dependency versions as the guest workspace, whose target directory
    // already holds them compiled (the scaffold builds without it too).
    std::fs::copy(repo_root().join("guest-adapters/Cargo.lock"), dir.join("Cargo.lock"))?;
    let guests = target_dir().join("wasm-guests");
    let mut cargo = Command::new(std::env::var("CARGO").unwrap_or_else(|_| "cargo".into()));
    cargo.current_dir(&dir).args(["build", "--release", "--target", "wasm32-wasip2", "--target-dir"]).arg(&guests);
    // The outer build's settings are for the host target (as in host/build.rs).
    for var in
        ["RUSTFLAGS", "CARGO_ENCODED_RUSTFLAGS", "RUSTC_WRAPPER", "RUSTC_WORKSPACE_WRAPPER", "CARGO_BUILD_TARGET"]
    {
        cargo.env_remove(var);
    }
    succeeded("cargo build of the Rust scaffold", cargo.output()?)?;
    check(&guests.join("wasm32-wasip2/release/scaffold_test_rust.wasm"))
}

/// The toolchains' `env.sh`, if `tools` (commands, checked with `command -v`
/// after sourcing it) are installed; an error if not and
/// `STOWAGE_REQUIRE_POLYGLOT=1`.
fn toolchain(lang: &str, tools: &str) -> anyhow::Result<Option<PathBuf>> {
    let dir = std::env::var_os("STOWAGE_TOOLCHAINS")
        .map(PathBuf::from)
        .or_else(|| std::env::var_os("HOME").map(|home| Path::new(&home).join(".cache/stowage-toolchains")))
        .unwrap_or_default();
    let env = dir.join("env.sh");
    let found = env.is_file()
        && Command::new("bash")
            .arg("-c")
            .arg(format!(". \"$1\" && for tool in {tools}; do command -v \"$tool\" >/dev/null || exit 1; done"))
            .arg("_")
            .arg(&env)
            .output()
            .is_ok_and(|o| o.status.success());
    if found {
        return Ok(Some(env));
    }
    let missing = format!(
        "the {lang} toolchain ({tools}) is not installed in {}: run .ci/polyglot-toolchains.sh (or set \
         STOWAGE_TOOLCHAINS)",
        dir.display()
    );
    if std::env::var("STOWAGE_REQUIRE_POLYGLOT").as_deref() == Ok("1") {
        bail!("{missing} (STOWAGE_REQUIRE_POLYGLOT=1)");
    }
    println!("not built: {missing}; STOWAGE_REQUIRE_POLYGLOT=1 makes this a failure");
    Ok(None)
}

/// Scaffolds `lang`, runs its `build.sh` with the toolchains' environment and
/// checks `<name>.wasm`.
fn polyglot(lang: &str, tools: &str) -> anyhow::Result<()> {
    let Some(env) = toolchain(lang, tools)? else { return Ok(()) };
    let scratch = tempfile::tempdir()?;
    let name = format!("scaffold-test-{lang}");
    let dir = scaffold(lang, scratch.path(), &name)?;
    let build = Command::new("bash")
        .current_dir(&dir)
        .arg("-c")
        .arg(". \"$1\" && ./build.sh")
        .arg("_")
        .arg(&env)
        .output()
        .context("running build.sh")?;
    succeeded(&format!("build.sh of the {lang} scaffold"), build)?;
    check(&dir.join(format!("{name}.wasm")))
}

#[test]
fn c_scaffold_builds_and_passes_check() -> anyhow::Result<()> {
    polyglot("c", "$STOWAGE_CC wit-bindgen wasm-tools")
}

#[test]
fn js_scaffold_builds_and_passes_check() -> anyhow::Result<()> {
    polyglot("js", "componentize-qjs")
}

#[test]
fn python_scaffold_builds_and_passes_check() -> anyhow::Result<()> {
    polyglot("python", "componentize-py")
}
