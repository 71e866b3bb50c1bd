//! Which lies are on: the mode file `/data/liar-mode`, read on every call.
//!
//! One mode name per line; blank lines and lines starting with `#` are ignored;
//! an absent file means honest. An unknown name fails the call with
//! `storage("liar: unknown mode …")`, so a typo in a test cannot pass as honesty.

use crate::stowage::store::types::Error;

/// Path of the mode file (needs the `filesystem` grant).
pub const MODE_FILE: &str = "/data/liar-mode";

/// One lie. See the crate documentation for what each does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    IgnoreScope,
    TrueScope,
    RewriteRole,
    FlipContent,
    OtherConversation,
    ChangeId,
    SwapSeqs,
    Reorder,
    SkipSeq,
    HugeMessage,
    BadCount,
    ReplayOld,
    DropTag,
}

const NAMES: [(&str, Mode); 13] = [
    ("ignore-scope", Mode::IgnoreScope),
    ("true-scope", Mode::TrueScope),
    ("rewrite-role", Mode::RewriteRole),
    ("flip-content", Mode::FlipContent),
    ("other-conversation", Mode::OtherConversation),
    ("change-id", Mode::ChangeId),
    ("swap-seqs", Mode::SwapSeqs),
    ("reorder", Mode::Reorder),
    ("skip-seq", Mode::SkipSeq),
    ("huge-message", Mode::HugeMessage),
    ("bad-count", Mode::BadCount),
    ("replay-old", Mode::ReplayOld),
    ("drop-tag", Mode::DropTag),
];

/// The set of lies in force for one call.
#[derive(Debug, Default, PartialEq, Eq)]
pub struct Modes(Vec<Mode>);

impl Modes {
    pub fn has(&self, mode: Mode) -> bool {
        self.0.contains(&mode)
    }

    /// Lookups ignore the scope (`ignore-scope` or `true-scope`).
    pub fn any_scope(&self) -> bool {
        self.has(Mode::IgnoreScope) || self.has(Mode::TrueScope)
    }

    /// Parses the mode file's text.
    pub fn parse(text: &str) -> Result<Self, String> {
        let mut modes = Vec::new();
        for line in text.lines().map(str::trim) {
            if line.is_empty() || line.starts_with('#') {
                continue;
            }
            match NAMES.iter().find(|(name, _)| *name == line) {
                Some((_, mode)) => modes.push(*mode),
                None => return Err(format!("liar: unknown mode `{line}` in {MODE_FILE}")),
            }
        }
        Ok(Self(modes))
    }

    /// The modes of the current call, from [`MODE_FILE`].
    pub fn current() -> Result<Self, Error> {
        match std::fs::read_to_string(MODE_FILE) {
            Ok(text) => Self::parse(&text).map_err(Error::Storage),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(Self::default()),
            Err(e) => Err(Error::Storage(format!("liar: reading {MODE_FILE}: {e}"))),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_name_parses_and_comments_are_skipped() {
        let all: Vec<&str> = NAMES.iter().map(|(name, _)| *name).collect();
        let text = format!("# lies\n\n{}\n", all.join("\n  "));
        let modes = Modes::parse(&text).unwrap_or_default();
        assert!(NAMES.iter().all(|(_, mode)| modes.has(*mode)));
        assert_eq!(Modes::parse(""), Ok(Modes::default()));
        assert!(!Modes::default().any_scope());
    }

    #[test]
    fn an_unknown_mode_is_an_error() {
        let err = Modes::parse("drop-tag\ndrop-tags\n");
        assert!(err.is_err_and(|e| e.contains("`drop-tags`")));
    }
}
