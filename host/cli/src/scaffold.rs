//! `stowage new-adapter`: writes a minimal storage adapter in Rust, C,
//! JavaScript or Python that builds with that language's toolchain and passes
//! `stowage check` as it is (the templates under `host/cli/templates/`, and the
//! contract's WIT, are embedded in the binary).
//!
//! Every template follows the pattern the author's guide (`docs/adapters.md`)
//! teaches: a call loads a conversation's state into memory, works on it there
//! and writes it back whole and durably — to one file per conversation under
//! `/data` (Rust, C, Python), or to the host-lent SQL database (JavaScript:
//! QuickJS has no file API).
//!
//! Guarantees: nothing is overwritten — the target directory must be missing or
//! empty; on a failure part-way, the files written so far stay (the error names
//! the one that failed).

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::ValueEnum;

use crate::context::bad_input;

/// The languages `new-adapter` writes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum Lang {
    Rust,
    C,
    Js,
    Python,
}

impl Lang {
    fn label(self) -> &'static str {
        match self {
            Lang::Rust => "Rust",
            Lang::C => "C",
            Lang::Js => "JavaScript",
            Lang::Python => "Python",
        }
    }
}

/// A file of a template: its path in the new adapter, its text (with
/// `{{name}}`, `{{crate}}` and `{{crate_file}}` placeholders), and whether it is
/// a script.
struct Template(&'static str, &'static str, bool);

macro_rules! template {
    ($lang:literal, $file:literal) => {
        Template($file, include_str!(concat!("../templates/", $lang, "/", $file)), false)
    };
    ($lang:literal, $file:literal as $path:literal) => {
        Template($path, include_str!(concat!("../templates/", $lang, "/", $file)), false)
    };
    ($lang:literal, script $file:literal) => {
        Template($file, include_str!(concat!("../templates/", $lang, "/", $file)), true)
    };
}

/// The contract every template implements, copied into `wit/`.
const WIT: [Template; 6] = [
    Template("wit/types.wit", include_str!("../../../wit/v0.2.0/types.wit"), false),
    Template("wit/conversation-store.wit", include_str!("../../../wit/v0.2.0/conversation-store.wit"), false),
    Template("wit/display-store.wit", include_str!("../../../wit/v0.2.0/display-store.wit"), false),
    Template("wit/log.wit", include_str!("../../../wit/v0.2.0/log.wit"), false),
    Template("wit/sql.wit", include_str!("../../../wit/v0.2.0/sql.wit"), false),
    Template("wit/worlds.wit", include_str!("../../../wit/v0.2.0/worlds.wit"), false),
];

fn templates(lang: Lang) -> Vec<Template> {
    match lang {
        Lang::Rust => vec![
            template!("rust", "Cargo.toml.tmpl" as "Cargo.toml"),
            template!("rust", "src/lib.rs"),
            template!("rust", "src/codec.rs"),
            template!("rust", "src/files.rs"),
            template!("rust", script "build.sh"),
            template!("rust", "README.md"),
            template!("rust", "gitignore" as ".gitignore"),
        ],
        Lang::C => vec![
            template!("c", "adapter.h"),
            template!("c", "adapter.c"),
            template!("c", "display.c"),
            template!("c", "files.c"),
            template!("c", script "build.sh"),
            template!("c", "README.md"),
            template!("c", "gitignore" as ".gitignore"),
        ],
        Lang::Js => vec![
            template!("js", "app.js"),
            template!("js", script "build.sh"),
            template!("js", "README.md"),
            template!("js", "gitignore" as ".gitignore"),
        ],
        Lang::Python => vec![
            template!("python", "app.py"),
            template!("python", script "build.sh"),
            template!("python", "README.md"),
            template!("python", "gitignore" as ".gitignore"),
        ],
    }
}

/// The adapter's name, from its directory: lower-case ASCII letters, digits and
/// `-`, starting with a letter (a valid crate, file and C identifier stem).
pub fn adapter_name(dir: &Path) -> anyhow::Result<String> {
    let base = dir.file_name().and_then(|n| n.to_str()).unwrap_or_default();
    let name: String = base
        .chars()
        .map(|c| if c.is_ascii_alphanumeric() { c.to_ascii_lowercase() } else { '-' })
        .collect::<String>()
        .trim_matches('-')
        .to_owned();
    if !name.starts_with(|c: char| c.is_ascii_lowercase()) {
        return Err(bad_input(format!(
            "cannot name an adapter after the directory {:?}: its name must start with a letter",
            dir.display()
        )));
    }
    Ok(name)
}

/// Writes the `lang` template into `dir` (missing or empty).
pub fn write(lang: Lang, dir: &Path) -> anyhow::Result<String> {
    let name = adapter_name(dir)?;
    if let Ok(mut entries) = std::fs::read_dir(dir)
        && entries.next().is_some()
    {
        return Err(bad_input(format!("{} is not empty: new-adapter never overwrites files", dir.display())));
    }
    let fill = |text: &str| {
        text.replace("{{name}}", &name).replace("{{crate}}", &name).replace("{{crate_file}}", &name.replace('-', "_"))
    };
    for Template(path, text, script) in templates(lang).into_iter().chain(WIT) {
        let target = dir.join(path);
        if let Some(parent) = target.parent() {
            std::fs::create_dir_all(parent).with_context(|| format!("creating {}", parent.display()))?;
        }
        std::fs::write(&target, fill(text)).with_context(|| format!("writing {}", target.display()))?;
        if script {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(&target, std::fs::Permissions::from_mode(0o755))
                .with_context(|| format!("making {} executable", target.display()))?;
        }
    }
    Ok(name)
}

/// `stowage new-adapter --lang LANG DIR`.
pub fn new_adapter(lang: Lang, dir: &Path) -> anyhow::Result<ExitCode> {
    let name = write(lang, dir)?;
    let grants = match lang {
        Lang::Js => "sql and filesystem",
        _ => "filesystem",
    };
    println!("wrote a {} adapter `{name}` to {} (its store needs the grants: {grants})", lang.label(), dir.display());
    println!("next, as its README.md says:");
    println!("  cd {} && ./build.sh && stowage check {name}.wasm", dir.display());
    Ok(ExitCode::SUCCESS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_come_from_the_directory_and_are_sanitised() {
        assert_eq!(adapter_name(Path::new("/tmp/My_Store.v2")).ok().as_deref(), Some("my-store-v2"));
        assert!(adapter_name(Path::new("/tmp/2fast")).is_err());
        assert!(adapter_name(Path::new("/")).is_err());
    }

    #[test]
    fn every_template_is_written_with_its_placeholders_filled() -> anyhow::Result<()> {
        for lang in [Lang::Rust, Lang::C, Lang::Js, Lang::Python] {
            let dir = tempfile::tempdir()?;
            let target = dir.path().join("my-store");
            write(lang, &target)?;
            for Template(path, _, _) in templates(lang).into_iter().chain(WIT) {
                let text = std::fs::read_to_string(target.join(path))?;
                assert!(!text.contains("{{"), "{lang:?} {path} keeps a placeholder");
            }
            assert!(write(lang, &target).is_err(), "{lang:?}: a second write must refuse a non-empty directory");
        }
        Ok(())
    }
}
