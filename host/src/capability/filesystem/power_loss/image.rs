//! The directory a power cut leaves behind, computed from a [`Disk`] and written
//! over the real one.
//!
//! Directories keep their durable entries ([`Metadata::Strict`]) or, under
//! [`Metadata::Any`], each one independently either those or its current ones
//! (the file system may have committed its pending changes, or not). Files
//! reached through those entries get their durable content plus, if they were
//! written since, one of (chosen at random):
//! - nothing of what was written since (lost);
//! - all of it (written back in time);
//! - a prefix of it: the length anywhere between the durable and the current
//!   one, the new bytes up to it (a write-back cut short);
//! - scattered 512-byte sectors: the length as above, each sector independently
//!   the old or the new bytes, and beyond the durable length the new bytes or
//!   zeros (blocks allocated but never written: holes).
//!
//! Bytes that were durable are never zeroed, and a shrink that was not synced
//! may come back with its old bytes.

use std::collections::{BTreeMap, HashMap};
use std::ffi::OsString;
use std::io;
use std::path::Path;

use super::disk::{Disk, Durable, Entries, Ino, Kind, Tree};
use super::{CutReport, Metadata};

const SECTOR: usize = 512;

/// splitmix64: small, fast and plenty for choosing failures.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Self {
        Self(seed)
    }

    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    /// Uniform in `lo..=hi`.
    fn between(&mut self, lo: usize, hi: usize) -> usize {
        lo + self.below((hi - lo) as u64 + 1) as usize
    }

    fn coin(&mut self) -> bool {
        self.next() & 1 == 1
    }
}

pub enum Image {
    File(Vec<u8>),
    Dir(BTreeMap<OsString, Image>),
}

/// Computes what survives a cut of `disk`, whose directory now looks like `tree`.
pub struct Crash<'a> {
    pub disk: &'a Disk,
    pub tree: &'a Tree,
    pub rng: Rng,
    pub metadata: Metadata,
    pub report: CutReport,
    /// One image per file inode, however many names reach it.
    files: HashMap<Ino, Vec<u8>>,
}

impl<'a> Crash<'a> {
    pub fn new(disk: &'a Disk, tree: &'a Tree, rng: Rng, metadata: Metadata, report: CutReport) -> Self {
        Self { disk, tree, rng, metadata, report, files: HashMap::new() }
    }

    /// The surviving entries of the root directory.
    pub fn root(&mut self) -> io::Result<BTreeMap<OsString, Image>> {
        let root = self.disk.root_ino;
        self.dir(root, &mut vec![root])
    }

    fn dir(&mut self, ino: Ino, path: &mut Vec<Ino>) -> io::Result<BTreeMap<OsString, Image>> {
        let durable = match self.disk.nodes.get(&ino).map(|n| &n.durable) {
            Some(Durable::Dir(entries)) => entries.clone(),
            _ => Entries::new(),
        };
        let entries = match self.tree.entries.get(&ino) {
            Some(current) if *current != durable => {
                if self.metadata == Metadata::Any && self.rng.coin() {
                    self.report.dirs_rolled_forward += 1;
                    current.clone()
                } else {
                    self.report.dirs_reverted += 1;
                    durable
                }
            }
            _ => durable,
        };
        let mut out = BTreeMap::new();
        for (name, child) in entries {
            // A directory renamed into its own subtree before its parents synced.
            if path.contains(&child) {
                continue;
            }
            let Some(node) = self.disk.nodes.get(&child) else { continue };
            let image = match node.kind {
                Kind::Dir => {
                    path.push(child);
                    let entries = self.dir(child, path)?;
                    path.pop();
                    Image::Dir(entries)
                }
                Kind::File => Image::File(self.file(child)?),
            };
            out.insert(name, image);
        }
        Ok(out)
    }

    fn file(&mut self, ino: Ino) -> io::Result<Vec<u8>> {
        if let Some(done) = self.files.get(&ino) {
            return Ok(done.clone());
        }
        let Some(node) = self.disk.nodes.get(&ino) else { return Ok(Vec::new()) };
        let durable = match &node.durable {
            Durable::File(content) => content.as_slice(),
            _ => &[],
        };
        let current = node.current_content()?;
        let image = self.tear(durable, &current);
        self.files.insert(ino, image.clone());
        Ok(image)
    }

    fn tear(&mut self, old: &[u8], new: &[u8]) -> Vec<u8> {
        if old == new {
            return old.to_vec();
        }
        let len = self.rng.between(old.len().min(new.len()), old.len().max(new.len()));
        match self.rng.below(4) {
            0 => {
                self.report.files_lost += 1;
                old.to_vec()
            }
            1 => {
                self.report.files_kept += 1;
                new.to_vec()
            }
            2 => {
                self.report.files_torn += 1;
                (0..len).map(|i| new.get(i).or(old.get(i)).copied().unwrap_or(0)).collect()
            }
            _ => {
                self.report.files_torn += 1;
                let mut out = vec![0u8; len];
                for (s, chunk) in out.chunks_mut(SECTOR).enumerate() {
                    let at = s * SECTOR;
                    let take_new = self.rng.coin();
                    for (k, byte) in chunk.iter_mut().enumerate() {
                        let i = at + k;
                        *byte = match (old.get(i), new.get(i)) {
                            (Some(&o), Some(&n)) => {
                                if take_new {
                                    n
                                } else {
                                    o
                                }
                            }
                            (None, Some(&n)) => {
                                if take_new {
                                    n
                                } else {
                                    0
                                }
                            }
                            (Some(&o), None) => o,
                            (None, None) => 0,
                        };
                    }
                }
                out
            }
        }
    }
}

/// Makes the directory `dir` hold exactly `image`, rewriting only what differs.
pub fn write(dir: &Path, image: &BTreeMap<OsString, Image>) -> io::Result<()> {
    for entry in std::fs::read_dir(dir)? {
        let entry = entry?;
        let is_dir = entry.file_type()?.is_dir();
        match image.get(&entry.file_name()) {
            Some(Image::Dir(_)) if is_dir => {}
            Some(Image::File(_)) if !is_dir => {}
            _ if is_dir => std::fs::remove_dir_all(entry.path())?,
            _ => std::fs::remove_file(entry.path())?,
        }
    }
    for (name, node) in image {
        let path = dir.join(name);
        match node {
            Image::File(content) => {
                if std::fs::read(&path).ok().as_ref() != Some(content) {
                    std::fs::write(&path, content)?;
                }
            }
            Image::Dir(entries) => {
                if !path.is_dir() {
                    std::fs::create_dir(&path)?;
                }
                write(&path, entries)?;
            }
        }
    }
    Ok(())
}
