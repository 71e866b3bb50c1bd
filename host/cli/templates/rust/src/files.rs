//! Conversation files under `/data/conversations/`, one per (scope,
//! conversation id), named by the SHA-256 of that key so any id (`../x`,
//! 512 bytes, `CON`) is a safe, fixed-length file name. The real scope and id
//! are stored inside the file.
//!
//! Durability: [`save`] writes a temporary file beside the target, fsyncs it,
//! renames it over the target and fsyncs the directory; when it returns, the
//! new state survives a crash or power loss, and a crash before that leaves
//! the previous file (and perhaps a `.tmp` file, which is ignored). The host
//! serialises writers of one conversation within its process, so two calls
//! never write the same file at once; two hosts sharing one store are not
//! supported.

use std::fs::{self, File};
use std::io::{ErrorKind, Write};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::stowage::store::types::{Error, Scope};
use crate::{Conversation, codec};

const DIR: &str = "/data/conversations";
const EXTENSION: &str = "conv";

fn storage(what: impl std::fmt::Display, err: impl std::fmt::Display) -> Error {
    Error::Storage(format!("{what}: {err}"))
}

fn path(scope: &Scope, id: &str) -> PathBuf {
    let mut hash = Sha256::new();
    for part in [&scope.tenant, &scope.user, id] {
        hash.update((part.len() as u64).to_le_bytes());
        hash.update(part.as_bytes());
    }
    let hex: String = hash.finalize().iter().map(|b| format!("{b:02x}")).collect();
    Path::new(DIR).join(format!("{hex}.{EXTENSION}"))
}

fn read(path: &Path) -> Result<Option<Conversation>, Error> {
    match fs::read(path) {
        Ok(data) => codec::decode(&data)
            .map(Some)
            .ok_or_else(|| storage(path.display(), "damaged file")),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
        Err(e) => Err(storage(path.display(), e)),
    }
}

/// The conversation's state; empty (no header, nothing stored) if it has no file.
pub fn load(scope: &Scope, id: &str) -> Result<Conversation, Error> {
    let empty = || Conversation {
        scope: scope.clone(),
        id: id.to_owned(),
        header: None,
        messages: Vec::new(),
        display: Vec::new(),
    };
    Ok(read(&path(scope, id))?.unwrap_or_else(empty))
}

/// Writes the conversation's file durably (see the module's documentation).
pub fn save(c: &Conversation) -> Result<(), Error> {
    let target = path(&c.scope, &c.id);
    let tmp = target.with_extension("tmp");
    let write = || -> std::io::Result<()> {
        if fs::metadata(DIR).is_err() {
            fs::create_dir_all(DIR)?;
            File::open("/data")?.sync_all()?;
        }
        let mut file = File::create(&tmp)?;
        file.write_all(&codec::encode(c))?;
        file.sync_all()?;
        fs::rename(&tmp, &target)?;
        File::open(DIR)?.sync_all()
    };
    write().map_err(|e| {
        let _ = fs::remove_file(&tmp);
        storage(format!("writing {}", target.display()), e)
    })
}

/// Removes the conversation's file (history and display records); false if
/// there was none.
pub fn delete(scope: &Scope, id: &str) -> Result<bool, Error> {
    let target = path(scope, id);
    match fs::remove_file(&target) {
        Ok(()) => File::open(DIR).and_then(|d| d.sync_all()).map(|()| true),
        Err(e) if e.kind() == ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
    .map_err(|e| storage(format!("deleting {}", target.display()), e))
}

/// Every conversation of the store.
pub fn all() -> Result<Vec<Conversation>, Error> {
    let entries = match fs::read_dir(DIR) {
        Ok(entries) => entries,
        Err(e) if e.kind() == ErrorKind::NotFound => return Ok(Vec::new()),
        Err(e) => return Err(storage(DIR, e)),
    };
    let mut conversations = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| storage(DIR, e))?.path();
        if path.extension().is_some_and(|e| e == EXTENSION) {
            conversations.extend(read(&path)?);
        }
    }
    Ok(conversations)
}
