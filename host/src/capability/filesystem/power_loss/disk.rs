//! What the simulated disk has made durable, inode by inode.
//!
//! The model is the strict POSIX one (the one ALICE and LazyFS test against):
//! - a file's content is durable as of its last `fsync`/`fdatasync` (both also
//!   persist the size); a file never synced is durable as an empty file;
//! - a directory's entries (which name points at which inode) are durable as of
//!   the directory's own last `fsync`: creating, renaming or unlinking a name is
//!   lost until its directory is synced. Syncing a file does not make its name
//!   durable, and syncing a directory does not make its files' data durable.
//!
//! Inodes, not paths, carry the state, so a rename moves a synced file's content
//! with it and a file replaced by a rename keeps its durable content for a
//! directory whose sync has not caught up. Every inode the model has seen is
//! pinned by a read-only descriptor: its number cannot be reused while the model
//! refers to it, and its latest content stays readable after it is unlinked.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

/// An inode: (device, inode number).
pub type Ino = (u64, u64);

/// A directory's entries: name to inode.
pub type Entries = BTreeMap<OsString, Ino>;

pub fn ino_of(meta: &std::fs::Metadata) -> Ino {
    (meta.dev(), meta.ino())
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    File,
    Dir,
}

/// What survives a power cut of one inode (its latest content is read live).
pub enum Durable {
    /// Never synced: an empty file, or a directory without entries.
    Never,
    File(Vec<u8>),
    Dir(Entries),
}

pub struct Node {
    /// Read-only; keeps the inode (and its number) alive.
    pin: File,
    pub kind: Kind,
    pub durable: Durable,
}

impl Node {
    /// The file's latest content, as the page cache holds it.
    pub fn current_content(&self) -> io::Result<Vec<u8>> {
        let mut out = Vec::new();
        let mut file = &self.pin;
        file.seek(SeekFrom::Start(0))?;
        file.read_to_end(&mut out)?;
        Ok(out)
    }
}

/// The directory tree as it is now (not as it would survive).
#[derive(Default)]
pub struct Tree {
    /// One path of every reachable inode (there are no hard links: the host
    /// refuses `link-at`).
    pub paths: HashMap<Ino, PathBuf>,
    pub kinds: HashMap<Ino, Kind>,
    /// Every reachable directory's entries.
    pub entries: HashMap<Ino, Entries>,
}

impl Tree {
    /// Walks everything under `root` (regular files and directories only).
    pub fn walk(root: &Path) -> io::Result<(Ino, Tree)> {
        let root_ino = ino_of(&std::fs::symlink_metadata(root)?);
        let mut tree = Tree::default();
        tree.paths.insert(root_ino, root.to_path_buf());
        tree.kinds.insert(root_ino, Kind::Dir);
        let mut pending = vec![(root_ino, root.to_path_buf())];
        while let Some((dir_ino, dir)) = pending.pop() {
            let mut entries = Entries::new();
            for entry in std::fs::read_dir(&dir)? {
                let entry = entry?;
                let meta = std::fs::symlink_metadata(entry.path())?;
                let kind = match meta.file_type() {
                    t if t.is_dir() => Kind::Dir,
                    t if t.is_file() => Kind::File,
                    _ => continue,
                };
                let ino = ino_of(&meta);
                entries.insert(entry.file_name(), ino);
                tree.paths.insert(ino, entry.path());
                tree.kinds.insert(ino, kind);
                if kind == Kind::Dir {
                    pending.push((ino, entry.path()));
                }
            }
            tree.entries.insert(dir_ino, entries);
        }
        Ok((root_ino, tree))
    }
}

/// The durable state of every inode seen under one root directory.
pub struct Disk {
    pub root: PathBuf,
    pub root_ino: Ino,
    pub nodes: HashMap<Ino, Node>,
}

impl Disk {
    /// A disk on which everything under `root` is durable as it is now.
    pub fn baseline(root: &Path) -> io::Result<Disk> {
        let (root_ino, tree) = Tree::walk(root)?;
        let mut disk = Disk { root: root.to_path_buf(), root_ino, nodes: HashMap::new() };
        disk.observe(&tree)?;
        for (ino, node) in &mut disk.nodes {
            node.durable = match node.kind {
                Kind::File => Durable::File(node.current_content()?),
                Kind::Dir => Durable::Dir(tree.entries.get(ino).cloned().unwrap_or_default()),
            };
        }
        Ok(disk)
    }

    /// Pins every inode of `tree` not seen before (nothing of it durable yet).
    pub fn observe(&mut self, tree: &Tree) -> io::Result<()> {
        for (ino, path) in &tree.paths {
            if self.nodes.contains_key(ino) {
                continue;
            }
            let pin = File::open(path)?;
            // The entry may have been replaced since the walk: record only what we pinned.
            if ino_of(&pin.metadata()?) != *ino {
                continue;
            }
            let kind = tree.kinds.get(ino).copied().unwrap_or(Kind::File);
            self.nodes.insert(*ino, Node { pin, kind, durable: Durable::Never });
        }
        Ok(())
    }

    /// `fsync` (or `fdatasync`) of inode `ino` reached the disk.
    pub fn sync(&mut self, ino: Ino) -> io::Result<()> {
        let (_, tree) = Tree::walk(&self.root)?;
        self.observe(&tree)?;
        // An inode without a name (unlinked before its sync) is never seen by
        // anyone after a cut; one the model has never seen cannot matter.
        let Some(node) = self.nodes.get_mut(&ino) else { return Ok(()) };
        node.durable = match node.kind {
            Kind::File => Durable::File(node.current_content()?),
            Kind::Dir => match tree.entries.get(&ino) {
                Some(entries) => Durable::Dir(entries.clone()),
                None => return Ok(()),
            },
        };
        Ok(())
    }
}
