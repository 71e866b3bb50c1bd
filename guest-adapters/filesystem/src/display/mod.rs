//! Display records (`display-store`): `display.log` in the conversation's
//! directory, a log of inserts and updates indexed like the message log
//! ([`state`]). Records may exist without a conversation, so nothing here
//! requires `meta.json`.

pub mod entry;
mod ops;
pub mod state;
mod sweep;

use std::fs::File;
use std::path::{Path, PathBuf};

use crate::durable;
use crate::exports::stowage::store::display_store::StoredDisplayRecord;
use crate::frame::FrameLoc;
use crate::layout;
use crate::legacy::{self, JSON_START, convert, types::DisplayEntry};
use crate::logfile::{self, Damage, undecodable};
use crate::store::Store;
use crate::stowage::store::types::Error;
pub use state::DisplayState;

/// A display log opened for one call.
pub(crate) struct LiveDisplay {
    dir: PathBuf,
    path: PathBuf,
    /// The open log; `None` if there is none yet.
    file: Option<File>,
    state: DisplayState,
    /// The index matches the log on disk and may be cached after the call.
    cacheable: bool,
}

impl Store {
    /// The display log in `dir` with an up-to-date index.
    pub(crate) fn live_display(&mut self, dir: PathBuf, write: bool, damage: Damage) -> Result<LiveDisplay, Error> {
        let path = dir.join(layout::DISPLAY);
        let cached = self.displays.take(&dir);
        let Some(file) = durable::open_existing(&path, write)? else {
            let state = DisplayState::default();
            return Ok(LiveDisplay { dir, path, file: None, state, cacheable: false });
        };
        let cached_len = cached.as_ref().map(|s| s.tail.file_len);
        let synced = logfile::sync(&file, &path, cached, damage)?;
        self.record_sync(synced.replayed, cached_len, synced.state.tail.file_len);
        let cacheable = synced.damaged_at.is_none();
        Ok(LiveDisplay { dir, path, file: Some(file), state: synced.state, cacheable })
    }

    /// Caches the index of `live` if it matches the file on disk.
    pub(crate) fn keep_display(&mut self, live: LiveDisplay) {
        if live.cacheable {
            self.displays.put(live.dir, live.state);
        }
    }
}

/// Every record stored in one frame (the current version or not), in frame order.
fn decode_frame(path: &Path, loc: FrameLoc, payload: &[u8]) -> Result<Vec<StoredDisplayRecord>, Error> {
    if payload.first() == Some(&JSON_START) {
        let records = match legacy::display_entry(payload).map_err(|e| undecodable(path, loc, e))? {
            DisplayEntry::Insert { records, .. } => records,
            DisplayEntry::Update(record) => vec![record],
        };
        return records
            .iter()
            .map(|r| {
                convert::display_record(r).map_err(|e| undecodable(path, loc, format!("display record {}: {e}", r.seq)))
            })
            .collect();
    }
    entry::decode_records(payload).map_err(|e| undecodable(path, loc, e))
}

/// The current version of the records `seqs` (ascending, all stored), in that order.
pub(crate) fn read_records(
    file: &File,
    path: &Path,
    state: &DisplayState,
    seqs: &[u64],
) -> Result<Vec<StoredDisplayRecord>, Error> {
    let mut locs: Vec<&state::DisplayLoc> = Vec::with_capacity(seqs.len());
    for &seq in seqs {
        let loc = usize::try_from(seq.wrapping_sub(1)).ok().and_then(|i| state.locs.get(i));
        locs.push(loc.ok_or_else(|| Error::Storage(format!("{}: no display record {seq}", path.display())))?);
    }
    let mut frames: Vec<FrameLoc> = locs.iter().map(|l| l.frame).collect();
    frames.sort_unstable();
    frames.dedup();
    let mut decoded: Vec<Vec<Option<StoredDisplayRecord>>> = Vec::with_capacity(frames.len());
    durable::for_each_payload(file, path, &frames, |_, loc, payload| {
        decoded.push(decode_frame(path, loc, payload)?.into_iter().map(Some).collect());
        Ok(())
    })?;
    let mut out = Vec::with_capacity(locs.len());
    for (&seq, loc) in seqs.iter().zip(&locs) {
        let slot = frames
            .binary_search(&loc.frame)
            .ok()
            .and_then(|f| decoded[f].get_mut(loc.index as usize))
            .and_then(Option::take);
        match slot {
            Some(record) if record.seq == seq => out.push(record),
            _ => {
                return Err(Error::Storage(format!(
                    "{}: the record at byte {} does not hold display record {seq} where the \
                     log's index says it is",
                    path.display(),
                    loc.frame.offset
                )));
            }
        }
    }
    Ok(out)
}
