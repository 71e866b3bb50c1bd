//! Escape attempts through Rust std: reading and listing outside `/data`, the
//! environment, the arguments and the network.

use crate::report::Report;

/// Tries to read and list `host_path` and other places outside `/data` (its
/// sibling `secret.txt`, `/etc/passwd`, `/`), to see the environment and the
/// arguments, and to open a TCP connection.
pub fn std_attempts(report: &mut Report, host_path: &str) {
    let targets = [
        host_path.to_owned(),
        format!("/data/../{}", host_path.trim_start_matches('/')),
        "/data/../secret.txt".to_owned(),
        "/data/../../../../etc/passwd".to_owned(),
        "/etc/passwd".to_owned(),
        "../etc/passwd".to_owned(),
        "/".to_owned(),
    ];
    for target in &targets {
        match std::fs::read(target) {
            Ok(_) => report.escaped(format!("read {target}")),
            Err(e) => report.refused(format!("read {target}: {e}")),
        }
        match std::fs::read_dir(target) {
            Ok(_) => report.escaped(format!("listed {target}")),
            Err(e) => report.refused(format!("list {target}: {e}")),
        }
    }
    match std::env::vars().count() {
        0 => report.refused("environment: empty"),
        n => report.escaped(format!("{n} environment variables are visible")),
    }
    match std::env::args().count() {
        0 => report.refused("arguments: empty"),
        n => report.escaped(format!("{n} arguments are visible")),
    }
    match std::net::TcpStream::connect("127.0.0.1:9") {
        Ok(_) => report.escaped("opened a TCP connection to 127.0.0.1:9"),
        Err(e) => report.refused(format!("tcp connect: {e}")),
    }
}
