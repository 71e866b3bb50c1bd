//! The real `stowage serve` binary: a bounded load test (N clients × M appends:
//! nothing lost, nothing twice, seqs contiguous), a kill test (SIGKILL mid-load,
//! restart: every acknowledged append is there) and graceful SIGTERM (a request
//! in flight finishes, then the process exits 0).

#[path = "../../../server/tests/support/http.rs"]
mod http;

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use http::{Client, Result};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncReadExt, AsyncWriteExt, BufReader};
use tokio::net::TcpStream;
use tokio::process::{Child, Command};

const TOKEN: &str = "acme-token-0123456789abcdef";

/// A configuration directory: SQLite store in `data/`, one token, extra
/// `[server]` lines.
fn setup(server_lines: &str) -> Result<tempfile::TempDir> {
    let dir = tempfile::tempdir()?;
    let config = format!(
        "[stores.main]\nadapter = \"sqlite\"\ndata_dir = \"data\"\n\n[server]\ntoken_file = \"tokens\"\n{server_lines}\n"
    );
    std::fs::write(dir.path().join("stowage.toml"), config)?;
    let tokens = dir.path().join("tokens");
    std::fs::write(&tokens, format!("# tenant token\nacme {TOKEN}\n"))?;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&tokens, std::fs::Permissions::from_mode(0o600))?;
    }
    Ok(dir)
}

struct Running {
    child: Child,
    addr: SocketAddr,
}

/// Starts `stowage serve` and waits for its `listening on` line.
async fn start(dir: &Path) -> Result<Running> {
    let cache: PathBuf = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("serve-component-cache");
    let mut child = Command::new(env!("CARGO_BIN_EXE_stowage"))
        .arg("--config")
        .arg(dir.join("stowage.toml"))
        .args(["serve", "--listen", "127.0.0.1:0"])
        .env("STOWAGE_CACHE_DIR", cache)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()?;
    let stdout = child.stdout.take().ok_or("no stdout")?;
    let mut lines = BufReader::new(stdout).lines();
    let line = tokio::time::timeout(Duration::from_secs(120), lines.next_line()).await??.ok_or("no output")?;
    let url = line.strip_prefix("listening on http://").ok_or_else(|| format!("unexpected first line: {line}"))?;
    Ok(Running { child, addr: url.parse()? })
}

fn ids_and_seqs(all: &Value) -> (Vec<String>, Vec<u64>) {
    let messages = all["messages"].as_array().cloned().unwrap_or_default();
    (
        messages.iter().filter_map(|m| m["id"].as_str().map(str::to_owned)).collect(),
        messages.iter().filter_map(|m| m["seq"].as_u64()).collect(),
    )
}

/// Asserts a conversation holds each id once, seqs 1..=n; returns its ids.
async fn verify(client: &Client, conversation: &str) -> Result<BTreeSet<String>> {
    let all = client.get(&format!("/v1/conversations/{conversation}/messages/all")).await?.json()?;
    let (ids, seqs) = ids_and_seqs(&all);
    let unique: BTreeSet<String> = ids.iter().cloned().collect();
    assert_eq!(unique.len(), ids.len(), "{conversation}: an id stored twice");
    assert_eq!(seqs, (1..=ids.len() as u64).collect::<Vec<u64>>(), "{conversation}: seqs not contiguous");
    Ok(unique)
}

fn batch(ids: &[String]) -> Value {
    let messages: Vec<Value> = ids
        .iter()
        .map(|id| json!({ "id": id, "role": "user", "parts": [{ "type": "text", "text": format!("message {id}") }] }))
        .collect();
    json!({ "messages": messages, "create_if_missing": true })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn load_n_clients_by_m_appends_nothing_lost_or_doubled() -> Result<()> {
    const CLIENTS: usize = 8;
    const APPENDS: usize = 40;
    let dir = setup("")?;
    let mut server = start(dir.path()).await?;
    let addr = server.addr;
    let mut tasks = Vec::new();
    for c in 0..CLIENTS {
        tasks.push(tokio::spawn(async move {
            let client = Client::new(addr, Some(TOKEN));
            // Two clients per conversation: concurrent writers of one history.
            let conversation = format!("load-{}", c % (CLIENTS / 2));
            let path = format!("/v1/conversations/{conversation}/messages");
            let mut expected = Vec::new();
            for a in 0..APPENDS {
                if a % 2 == 0 {
                    let ids = vec![format!("c{c}-a{a}-0"), format!("c{c}-a{a}-1")];
                    let reply = client.post(&path, &batch(&ids)).await?;
                    assert_eq!((reply.status, reply.json()?["stored"].as_u64()), (200, Some(2)), "{}", reply.text());
                    expected.extend(ids);
                } else {
                    // No ids: an Idempotency-Key, and a retry as after a lost response.
                    let body = serde_json::to_vec(&json!({
                        "messages": [{ "role": "assistant", "parts": [{ "type": "text", "text": "keyed" }] }],
                        "create_if_missing": true,
                    }))?;
                    let key = format!("c{c}-a{a}");
                    let headers = [("idempotency-key", key.as_str())];
                    let first = client.send("POST", &path, &headers, Some(body.clone())).await?.json()?;
                    let retry = client.send("POST", &path, &headers, Some(body)).await?.json()?;
                    assert_eq!((first["stored"].as_u64(), retry["stored"].as_u64()), (Some(1), Some(0)));
                    assert_eq!(first["seqs"], retry["seqs"]);
                    expected.push(first["ids"][0].as_str().ok_or("an id")?.to_owned());
                }
            }
            Ok::<(String, Vec<String>), http::Error>((conversation, expected))
        }));
    }
    let mut expected: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for task in tasks {
        let (conversation, ids) = tokio::time::timeout(Duration::from_secs(300), task).await???;
        expected.entry(conversation).or_default().extend(ids);
    }
    let client = Client::new(addr, Some(TOKEN));
    for (conversation, ids) in &expected {
        assert_eq!(&verify(&client, conversation).await?, ids, "{conversation}");
    }
    let total: usize = expected.values().map(BTreeSet::len).sum();
    assert_eq!(total, CLIENTS * (APPENDS / 2) * 3);
    eprintln!(
        "{CLIENTS} clients x {APPENDS} appends: {total} messages in {} conversations, each id once",
        expected.len()
    );
    let metrics = client.get("/metrics").await?.text();
    assert!(metrics.contains("stowage_store_calls_total{store=\"main\",operation=\"append_creating\"}"), "{metrics}");
    server.child.kill().await?;
    Ok(())
}

#[tokio::test(flavor = "multi_thread", worker_threads = 4)]
async fn sigkill_mid_load_keeps_every_acknowledged_append() -> Result<()> {
    const CLIENTS: usize = 4;
    let dir = setup("")?;
    let mut server = start(dir.path()).await?;
    let addr = server.addr;
    let acked: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let in_doubt: Arc<Mutex<Vec<(String, String)>>> = Arc::default();
    let mut tasks = Vec::new();
    for c in 0..CLIENTS {
        let (acked, in_doubt) = (Arc::clone(&acked), Arc::clone(&in_doubt));
        tasks.push(tokio::spawn(async move {
            let client = Client::new(addr, Some(TOKEN));
            let conversation = format!("kill-{}", c % 2);
            for a in 0..100_000 {
                let id = format!("c{c}-a{a}");
                match client
                    .post(&format!("/v1/conversations/{conversation}/messages"), &batch(std::slice::from_ref(&id)))
                    .await
                {
                    Ok(reply) if reply.status == 200 => {
                        acked.lock().map_err(|_| "poisoned")?.push((conversation.clone(), id));
                    }
                    _ => {
                        in_doubt.lock().map_err(|_| "poisoned")?.push((conversation.clone(), id));
                        return Ok::<(), http::Error>(());
                    }
                }
            }
            Ok(())
        }));
    }
    // Kill once enough appends were acknowledged (bounded wait).
    for _ in 0..6000 {
        if acked.lock().map_err(|_| "poisoned")?.len() >= 200 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(10)).await;
    }
    server.child.start_kill()?; // SIGKILL
    server.child.wait().await?;
    for task in tasks {
        tokio::time::timeout(Duration::from_secs(120), task).await???;
    }
    let acked = acked.lock().map_err(|_| "poisoned")?.clone();
    assert!(acked.len() >= 200, "only {} appends were acknowledged", acked.len());
    let in_doubt = in_doubt.lock().map_err(|_| "poisoned")?.clone();
    eprintln!("killed after {} acknowledged appends; {} in doubt", acked.len(), in_doubt.len());

    let mut restarted = start(dir.path()).await?;
    let client = Client::new(restarted.addr, Some(TOKEN));
    for conversation in ["kill-0", "kill-1"] {
        let stored = verify(&client, conversation).await?;
        for (_, id) in acked.iter().filter(|(c, _)| c == conversation) {
            assert!(stored.contains(id), "acknowledged {id} is missing from {conversation}");
        }
    }
    // The appends in doubt are safe to retry: their ids are stored once at most.
    for (conversation, id) in &in_doubt {
        let reply = client
            .post(&format!("/v1/conversations/{conversation}/messages"), &batch(std::slice::from_ref(id)))
            .await?;
        assert_eq!(reply.status, 200, "{}", reply.text());
    }
    for conversation in ["kill-0", "kill-1"] {
        let stored = verify(&client, conversation).await?;
        let expected = acked.iter().chain(&in_doubt).filter(|(c, _)| c == conversation).count();
        assert_eq!(stored.len(), expected, "{conversation}");
    }
    restarted.child.kill().await?;
    Ok(())
}

#[tokio::test]
async fn sigterm_finishes_the_request_in_flight_then_exits_0() -> Result<()> {
    let dir = setup("tenant_concurrency = 1")?;
    let mut server = start(dir.path()).await?;
    let body = serde_json::to_vec(&batch(&["in-flight".to_owned()]))?;
    let (head_part, rest) = body.split_at(10);
    let head = format!(
        "POST /v1/conversations/term/messages HTTP/1.1\r\nhost: t\r\nauthorization: Bearer {TOKEN}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    );
    // The request is in its handler once the tenant's single permit is taken.
    let probe = Client::new(server.addr, Some(TOKEN));
    let mut stalled = http::stall_holding_the_permit(&probe, || async {
        let mut stalled = TcpStream::connect(server.addr).await?;
        stalled.write_all(head.as_bytes()).await?;
        stalled.write_all(head_part).await?;
        Ok(stalled)
    })
    .await?;
    let pid = server.child.id().ok_or("no pid")?;
    let status = std::process::Command::new("kill").args(["-TERM", &pid.to_string()]).status()?;
    assert!(status.success());
    stalled.write_all(rest).await?;
    let mut reply = String::new();
    tokio::time::timeout(http::GUARD, stalled.read_to_string(&mut reply)).await??;
    assert!(reply.starts_with("HTTP/1.1 200"), "{reply}");
    let exit = tokio::time::timeout(http::GUARD, server.child.wait()).await??;
    assert!(exit.success(), "exit status {exit:?}");

    let mut restarted = start(dir.path()).await?;
    let client = Client::new(restarted.addr, Some(TOKEN));
    assert_eq!(verify(&client, "term").await?, BTreeSet::from(["in-flight".to_owned()]));
    restarted.child.kill().await?;
    Ok(())
}
