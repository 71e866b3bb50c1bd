//! The README's first screen and its Rust snippet stay true: the two commands
//! are the ones CI runs, and the embedding snippet is the code of
//! `examples/embedding.rs` (which CI runs). The other snippets (TOML, shell,
//! Python, JavaScript) are executed by `.ci/readme-snippets.py`.

use std::path::PathBuf;

fn root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).parent().expect("tests/ lives in the workspace root").to_path_buf()
}

fn read(path: &str) -> String {
    std::fs::read_to_string(root().join(path)).unwrap_or_else(|e| panic!("reading {path}: {e}"))
}

/// The fenced blocks of `text` with their info string.
fn blocks(text: &str) -> Vec<(String, String)> {
    let mut found = Vec::new();
    let mut open: Option<(String, String)> = None;
    for line in text.lines() {
        match (&mut open, line.strip_prefix("```")) {
            (None, Some(info)) => open = Some((info.trim().to_owned(), String::new())),
            (Some(_), Some(_)) => found.extend(open.take()),
            (Some((_, body)), None) => {
                body.push_str(line);
                body.push('\n');
            }
            (None, None) => {}
        }
    }
    found
}

/// The command lines of a shell block (comments and blank lines dropped).
fn commands(body: &str) -> Vec<String> {
    body.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with('#')).map(str::to_owned).collect()
}

#[test]
fn the_first_screen_gives_exactly_the_two_commands_ci_runs() {
    let readme = read("README.md");
    let quick_start = readme.split("## Quick start").nth(1).expect("a Quick start section");
    let first = blocks(quick_start).into_iter().next().expect("a code block in Quick start");
    assert_eq!(first.0, "sh");
    let lines = commands(&first.1);
    assert_eq!(
        lines,
        ["cargo run -p stowage-cli -- demo", "cargo test --workspace --no-fail-fast"],
        "nothing before the two commands"
    );
    // The first screen: the commands sit within the first 40 lines.
    let line_of = |needle: &str| readme.lines().position(|l| l.trim() == needle).expect("command line present");
    assert!(line_of("cargo test --workspace --no-fail-fast") < 40, "the test command is on the first screen");

    let ci = read(".ci/run");
    assert!(
        ci.contains("test_command() { cargo test --workspace --no-fail-fast; }"),
        "CI runs the README's test command"
    );
    assert!(ci.contains("demo_command() { cargo run -p stowage-cli -- demo; }"), "CI runs the README's main job");
}

#[test]
fn the_embedding_snippet_is_the_example_ci_runs() {
    let readme = read("README.md");
    let rust: Vec<_> = blocks(&readme).into_iter().filter(|(info, _)| info == "rust").collect();
    assert_eq!(rust.len(), 1, "one Rust snippet, mirrored by examples/embedding.rs");
    let example = read("examples/embedding.rs");
    let marked = example
        .split("// readme:start\n")
        .nth(1)
        .and_then(|rest| rest.split("    // readme:end").next())
        .expect("readme markers in examples/embedding.rs");
    let example_lines: Vec<&str> = marked.lines().map(str::trim).collect();
    let snippet_lines: Vec<&str> =
        rust[0].1.lines().map(str::trim).filter(|l| !l.is_empty() && !l.starts_with("use ")).collect();
    assert_eq!(snippet_lines, example_lines, "README's Rust block and examples/embedding.rs differ");
    let uses = rust[0].1.lines().find(|l| l.starts_with("use ")).expect("the snippet's use line");
    assert!(example.contains(uses), "the example imports what the snippet does");
}
