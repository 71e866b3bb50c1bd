//! Starting an empty WAL on a connection: its first frame, and written room
//! after it for the first commits ([`super::super::ahead`] runs it on a thread
//! of its own while the store opens).

use std::path::Path;
use std::time::Duration;

use super::super::prefill;
use super::{Sqlite, map_error};
use crate::wit::SqlErrorKind;

impl Sqlite {
    /// Gives an empty WAL its first frame with a commit that changes nothing
    /// (page 1, `user_version` set to what it is), without waiting for another
    /// writer: `Ok(false)` if one holds the lock. See
    /// [`super::super::SqlDatabase::open_ahead`].
    /// `flushed_after`: the caller flushes the WAL and its directory once this
    /// returns (`sql_sync = "full"`), so SQLite need not flush the new WAL's header
    /// and directory before the frame, two flushes in a row.
    pub fn write_first_frame(
        &mut self,
        busy_timeout: Duration,
        flushed_after: bool,
        wal: &Path,
    ) -> Result<bool, SqlErrorKind> {
        self.conn.busy_timeout(Duration::ZERO).map_err(map_error)?;
        let written = self.host(|conn| {
            if flushed_after {
                conn.execute_batch("PRAGMA synchronous = OFF")?;
            }
            let same = conn.execute_batch("BEGIN IMMEDIATE").and_then(|()| {
                let same = conn
                    .query_row("PRAGMA user_version", [], |row| row.get::<_, i64>(0))
                    .and_then(|version| conn.execute_batch(&format!("PRAGMA user_version = {version}")))
                    .and_then(|()| conn.execute_batch("COMMIT"));
                if same.is_err() && !conn.is_autocommit() {
                    let _ = conn.execute_batch("ROLLBACK");
                }
                same
            });
            conn.execute_batch("PRAGMA synchronous = NORMAL").and(same)
        });
        if written.is_ok() {
            self.make_first_room(wal);
        }
        self.conn.busy_timeout(busy_timeout).map_err(map_error)?;
        match written {
            Ok(()) => Ok(true),
            Err(SqlErrorKind::Busy) => Ok(false),
            Err(e) => Err(e),
        }
    }

    /// Room for the first commits past the WAL's first frame, written holding
    /// SQLite's write lock ([`prefill::first_room`]). Only a cost saved: without
    /// it (another writer holds the lock, a failed write) SQLite grows the WAL
    /// as it writes.
    fn make_first_room(&mut self, wal: &Path) {
        let made = self.host(|conn| {
            conn.execute_batch("BEGIN IMMEDIATE")?;
            let made = prefill::first_room(wal);
            conn.execute_batch("ROLLBACK").map(|()| made)
        });
        if !self.conn.is_autocommit() {
            let _ = self.host(|conn| conn.execute_batch("ROLLBACK"));
        }
        match made {
            Ok(Ok(_)) => {}
            Ok(Err(error)) => tracing::debug!(%error, "no room written past the WAL's first frame"),
            Err(error) => tracing::debug!(?error, "no room written past the WAL's first frame"),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicBool, AtomicU64};

    use super::super::open;
    use super::*;

    /// Starting an empty WAL for a caller that flushes it after: the frame is
    /// written (header and page 1) and the connection is back at `NORMAL`, so the
    /// adapter's commits never run unflushed by SQLite's own rules either.
    #[test]
    fn the_first_frame_is_written_and_synchronous_restored() -> Result<(), Box<dyn std::error::Error>> {
        for flushed_after in [true, false] {
            let dir = tempfile::tempdir()?;
            let path = dir.path().join("t.db");
            crate::capability::sql::fresh::create_if_missing(&path, false).map_err(|e| format!("{e:?}"))?;
            let counters = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)), Arc::new(AtomicBool::new(false)));
            let mut conn = open(&path, Duration::from_secs(1), counters.0, counters.1, counters.2)
                .map_err(|e| format!("{e:?}"))?;
            let wal = dir.path().join("t.db-wal");
            let written = conn.write_first_frame(Duration::from_secs(1), flushed_after, &wal);
            assert!(written.map_err(|e| format!("{e:?}"))?);
            let synchronous: i64 = conn
                .host(|conn| conn.pragma_query_value(None, "synchronous", |row| row.get(0)))
                .map_err(|e| format!("{e:?}"))?;
            assert_eq!(synchronous, 1, "NORMAL again ({flushed_after})");
            let room = 32 + prefill::FIRST_ROOM_FRAMES * (24 + 4096);
            assert_eq!(std::fs::metadata(&wal)?.len(), room, "the frame and room after it");
        }
        Ok(())
    }
}
