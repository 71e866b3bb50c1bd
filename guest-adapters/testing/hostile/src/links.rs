//! Escape attempts through links, with raw WASI 0.2 filesystem calls on the
//! `/data` preopen (Rust std has no symlink or hard-link API on wasm32-wasip2).
//!
//! Every link this module manages to create is followed (to see whether the host
//! resolves it outside `/data`) and then removed again, and a host database it
//! moved aside is put back, so a run leaves `/data` as it found it whenever the
//! host lets it clean up. What could not be undone is reported as refused with
//! `LEFT BEHIND`.

use wasip2::filesystem::preopens::get_directories;
use wasip2::filesystem::types::{Descriptor, DescriptorFlags, DescriptorType, ErrorCode, OpenFlags, PathFlags};

use crate::report::Report;

/// The host's SQLite file name: an adapter granted `sql` and `filesystem` used to
/// find it in `/data`.
const DATABASE: &str = "stowage.sqlite3";
/// Where an existing `stowage.sqlite3` is moved while its name is attacked.
const DATABASE_ASIDE: &str = "stowage.sqlite3.hostile-aside";
/// A file of our own, the source of the hard links.
const PROBE: &str = "hostile-probe.txt";
/// First bytes of every SQLite database file.
const SQLITE_MAGIC: &[u8] = b"SQLite format 3\0";

/// Runs every link attempt against `/data`. `host_path` is a file outside the
/// data directory (absolute, host side); `sibling_database` is the symlink target
/// naming another store's database, relative to `/data` or absolute.
pub fn link_attempts(report: &mut Report, host_path: &str, sibling_database: &str) {
    let Some(data) = data_dir() else {
        report.refused("links: no /data preopen, nothing to link in");
        return;
    };
    symlinks(&data, report, host_path, sibling_database);
    hard_links(&data, report, host_path);
    replace_database(&data, report, host_path, sibling_database);
}

fn data_dir() -> Option<Descriptor> {
    get_directories().into_iter().find(|(_, path)| path == "/data").map(|(dir, _)| dir)
}

/// (a) Symlinks inside `/data` that point outside it, and one placed outside.
fn symlinks(data: &Descriptor, report: &mut Report, host_path: &str, sibling_database: &str) {
    let attempts = [
        ("hostile-link-up", "../.."),
        ("hostile-link-secret", "../secret.txt"),
        ("hostile-link-deep", "../../../../../../etc/passwd"),
        ("hostile-link-absolute", host_path),
        ("hostile-link-etc", "/etc/passwd"),
        ("hostile-link-sibling", sibling_database),
        ("../hostile-link-outside", "data"),
    ];
    for (name, target) in attempts {
        // A leftover of an earlier run would make the attempt fail with `exist`.
        let _ = data.unlink_file_at(name);
        match data.symlink_at(target, name) {
            Ok(()) => {
                report.escaped(format!("created symlink /data/{name} -> {target}"));
                follow(data, report, name);
                remove(data, report, name);
            }
            Err(e) => report.refused(format!("symlink /data/{name} -> {target}: {}", code(e))),
        }
    }
}

/// (b) Hard links: of our own file (inside and outside `/data`), of a file
/// outside, and of the host's database when it is visible.
fn hard_links(data: &Descriptor, report: &mut Report, host_path: &str) {
    if let Err(e) = std::fs::write(format!("/data/{PROBE}"), b"hostile probe") {
        report.refused(format!("create /data/{PROBE} (hard-link source): {e}"));
    }
    let attempts = [
        (PROBE, "hostile-hardlink-probe"),
        (PROBE, "../hostile-hardlink-outside"),
        ("../secret.txt", "hostile-hardlink-secret"),
        (host_path, "hostile-hardlink-absolute"),
        (DATABASE, "hostile-hardlink-database"),
    ];
    for (source, name) in attempts {
        let _ = data.unlink_file_at(name);
        match data.link_at(PathFlags::empty(), source, data, name) {
            Ok(()) => {
                report.escaped(format!("created hard link /data/{name} to `{source}` (relative to /data)"));
                remove(data, report, name);
            }
            Err(e) => report.refused(format!("hard link /data/{name} to `{source}`: {}", code(e))),
        }
    }
    let _ = data.unlink_file_at(PROBE);
}

/// (c) Replace `/data/stowage.sqlite3` with a symlink, as finding 1 of issue 9
/// did: the host's SQLite followed it into another store's database.
fn replace_database(data: &Descriptor, report: &mut Report, host_path: &str, sibling_database: &str) {
    let existed = match data.stat_at(PathFlags::empty(), DATABASE) {
        Ok(_) => true,
        Err(ErrorCode::NoEntry) => false,
        Err(e) => {
            report.refused(format!("stat /data/{DATABASE}: {}", code(e)));
            return;
        }
    };
    if existed {
        inspect_database(data, report);
        if let Err(e) = data.rename_at(DATABASE, data, DATABASE_ASIDE) {
            report.refused(format!("move /data/{DATABASE} aside: {}", code(e)));
            return;
        }
    }
    for target in [sibling_database, "../..", host_path] {
        match data.symlink_at(target, DATABASE) {
            Ok(()) => {
                report.escaped(format!("replaced /data/{DATABASE} with a symlink to {target}"));
                remove(data, report, DATABASE);
            }
            Err(e) => report.refused(format!("symlink /data/{DATABASE} -> {target}: {}", code(e))),
        }
    }
    if existed && let Err(e) = data.rename_at(DATABASE_ASIDE, data, DATABASE) {
        report.refused(format!("LEFT BEHIND: /data/{DATABASE} is still at /data/{DATABASE_ASIDE}: {}", code(e)));
    }
}

/// A `stowage.sqlite3` in `/data` that is a real SQLite database is the host's
/// (the fixture never writes one): seeing it at all is a breach.
fn inspect_database(data: &Descriptor, report: &mut Report) {
    let head = data
        .open_at(PathFlags::empty(), DATABASE, OpenFlags::empty(), DescriptorFlags::READ)
        .and_then(|file| file.read(SQLITE_MAGIC.len() as u64, 0));
    match head {
        Ok((bytes, _)) if bytes == SQLITE_MAGIC => {
            report.escaped(format!("read the header of a SQLite database at /data/{DATABASE}"))
        }
        Ok(_) => report.refused(format!("/data/{DATABASE} exists but is not a SQLite database")),
        Err(e) => report.refused(format!("read /data/{DATABASE}: {}", code(e))),
    }
}

/// Opens `name` following symlinks and reads from it (or lists it).
fn follow(data: &Descriptor, report: &mut Report, name: &str) {
    let opened = data.open_at(PathFlags::SYMLINK_FOLLOW, name, OpenFlags::empty(), DescriptorFlags::READ);
    let file = match opened {
        Ok(file) => file,
        Err(e) => {
            report.refused(format!("follow /data/{name}: {}", code(e)));
            return;
        }
    };
    if let Ok(DescriptorType::Directory) = file.get_type() {
        match file.read_directory() {
            Ok(_) => report.escaped(format!("listed a directory through /data/{name}")),
            Err(e) => report.refused(format!("list through /data/{name}: {}", code(e))),
        }
        return;
    }
    match file.read(64, 0) {
        Ok((bytes, _)) => report.escaped(format!("read {} bytes through /data/{name}", bytes.len())),
        Err(e) => report.refused(format!("read through /data/{name}: {}", code(e))),
    }
}

/// Removes a link this run created; one that stays is reported.
fn remove(data: &Descriptor, report: &mut Report, name: &str) {
    if let Err(e) = data.unlink_file_at(name) {
        report.refused(format!("LEFT BEHIND: /data/{name}: {}", code(e)));
    }
}

fn code(e: ErrorCode) -> &'static str {
    e.name()
}
