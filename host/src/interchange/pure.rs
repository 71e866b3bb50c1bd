//! What a `--pure` export left out, by kind.

use std::collections::BTreeMap;

use serde::ser::SerializeSeq;
use serde::{Serialize, Serializer};

use crate::model::Part;

/// Counts of what an export left out, by kind ("thinking (no Chat Completions
/// form)", "`annotations` member", …). Serialises as a list of
/// `{"what": …, "count": …}`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Dropped(BTreeMap<String, u64>);

impl Dropped {
    pub fn add(&mut self, what: impl Into<String>) {
        *self.0.entry(what.into()).or_default() += 1;
    }

    pub fn merge(&mut self, other: Dropped) {
        for (what, count) in other.0 {
            *self.0.entry(what).or_default() += count;
        }
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// `(kind, count)` pairs, by kind.
    pub fn entries(&self) -> impl Iterator<Item = (&str, u64)> {
        self.0.iter().map(|(k, v)| (k.as_str(), *v))
    }
}

impl std::fmt::Display for Dropped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for (i, (what, count)) in self.entries().enumerate() {
            if i > 0 {
                f.write_str(", ")?;
            }
            write!(f, "{count} × {what}")?;
        }
        Ok(())
    }
}

impl Serialize for Dropped {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        #[derive(Serialize)]
        struct Entry<'a> {
            what: &'a str,
            count: u64,
        }
        let mut seq = serializer.serialize_seq(Some(self.0.len()))?;
        for (what, count) in self.entries() {
            seq.serialize_element(&Entry { what, count })?;
        }
        seq.end()
    }
}

/// How a part is named in reports.
pub fn describe(part: &Part) -> String {
    match part {
        Part::Text { .. } => "text part".into(),
        Part::Thinking { .. } => "thinking part".into(),
        Part::ToolCall { .. } => "tool call".into(),
        Part::ToolResult { .. } => "tool result".into(),
        Part::Media { mime_type, .. } => format!("{mime_type} media part"),
        Part::Provider { format, .. } => format!("{format} provider part"),
    }
}

/// The export mode, and what it has left out so far.
pub struct Out {
    pure: bool,
    pub dropped: Dropped,
}

impl Out {
    pub fn new(pure: bool) -> Self {
        Self { pure, dropped: Dropped::default() }
    }

    pub fn pure(&self) -> bool {
        self.pure
    }

    /// Records something the export leaves out (keep mode carries it in
    /// `x_stowage` instead, so nothing is recorded there).
    pub fn drop(&mut self, what: impl Into<String>) {
        if self.pure {
            self.dropped.add(what);
        }
    }
}
