//! A minimal HTTP/1.1 client for the end-to-end tests (hyper's low-level client,
//! one connection per request), with a Server-Sent Events reader. Shared with
//! the CLI's tests of the real `stowage serve` binary (`#[path]`-included), so it
//! depends on nothing of the server crate.

#![allow(dead_code)]

use std::net::SocketAddr;
use std::time::Duration;

use http_body_util::{BodyExt, Full};
use hyper::body::{Bytes, Incoming};
use hyper_util::rt::TokioIo;
use tokio::net::TcpStream;

pub type Error = Box<dyn std::error::Error + Send + Sync>;
pub type Result<T> = std::result::Result<T, Error>;

/// Guard against a hung server: no test waits longer than this for one answer.
pub const GUARD: Duration = Duration::from_secs(60);

/// An answer.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub headers: hyper::HeaderMap,
    pub body: Vec<u8>,
}

impl Reply {
    pub fn json(&self) -> Result<serde_json::Value> {
        serde_json::from_slice(&self.body).map_err(|e| format!("{e}: {}", String::from_utf8_lossy(&self.body)).into())
    }

    /// The `error.code` of an error answer ("" when there is none).
    pub fn code(&self) -> String {
        self.json().ok().and_then(|v| v["error"]["code"].as_str().map(str::to_owned)).unwrap_or_default()
    }

    pub fn header(&self, name: &str) -> Option<String> {
        self.headers.get(name).and_then(|v| v.to_str().ok()).map(str::to_owned)
    }

    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.body).into_owned()
    }
}

/// A client of one server, with a bearer token and a user.
#[derive(Clone, Debug)]
pub struct Client {
    pub addr: SocketAddr,
    pub token: Option<String>,
    pub user: Option<String>,
}

async fn connect(addr: SocketAddr) -> Result<hyper::client::conn::http1::SendRequest<Full<Bytes>>> {
    let stream = TcpStream::connect(addr).await?;
    let (sender, connection) = hyper::client::conn::http1::handshake(TokioIo::new(stream)).await?;
    tokio::spawn(async move {
        let _ = connection.await;
    });
    Ok(sender)
}

impl Client {
    pub fn new(addr: SocketAddr, token: Option<&str>) -> Self {
        Self { addr, token: token.map(str::to_owned), user: None }
    }

    pub fn user(mut self, user: &str) -> Self {
        self.user = Some(user.to_owned());
        self
    }

    fn request(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<Vec<u8>>,
    ) -> Result<hyper::Request<Full<Bytes>>> {
        let mut builder = hyper::Request::builder().method(method).uri(path).header("host", self.addr.to_string());
        if let Some(token) = &self.token {
            builder = builder.header("authorization", format!("Bearer {token}"));
        }
        if let Some(user) = &self.user {
            builder = builder.header("stowage-user", user.as_str());
        }
        let typed = headers.iter().any(|(name, _)| name.eq_ignore_ascii_case("content-type"));
        if body.is_some() && !typed {
            builder = builder.header("content-type", "application/json");
        }
        for (name, value) in headers {
            builder = builder.header(*name, *value);
        }
        Ok(builder.body(Full::new(Bytes::from(body.unwrap_or_default())))?)
    }

    async fn exchange(&self, request: hyper::Request<Full<Bytes>>) -> Result<hyper::Response<Incoming>> {
        let mut sender = connect(self.addr).await?;
        Ok(tokio::time::timeout(GUARD, sender.send_request(request)).await??)
    }

    /// One request; `body` is sent as JSON.
    pub async fn send(
        &self,
        method: &str,
        path: &str,
        headers: &[(&str, &str)],
        body: Option<Vec<u8>>,
    ) -> Result<Reply> {
        let response = self.exchange(self.request(method, path, headers, body)?).await?;
        let status = response.status().as_u16();
        let headers = response.headers().clone();
        let body = tokio::time::timeout(GUARD, response.into_body().collect()).await??.to_bytes().to_vec();
        Ok(Reply { status, headers, body })
    }

    pub async fn get(&self, path: &str) -> Result<Reply> {
        self.send("GET", path, &[], None).await
    }

    pub async fn delete(&self, path: &str) -> Result<Reply> {
        self.send("DELETE", path, &[], None).await
    }

    pub async fn post(&self, path: &str, body: &serde_json::Value) -> Result<Reply> {
        self.send("POST", path, &[], Some(serde_json::to_vec(body)?)).await
    }

    pub async fn put(&self, path: &str, body: &serde_json::Value) -> Result<Reply> {
        self.send("PUT", path, &[], Some(serde_json::to_vec(body)?)).await
    }

    /// Opens an event stream (`Last-Event-ID` when given). Fails unless 200.
    pub async fn events(&self, path: &str, last_event_id: Option<&str>) -> Result<Events> {
        let headers: Vec<(&str, &str)> = last_event_id.map(|id| ("last-event-id", id)).into_iter().collect();
        let response = self.exchange(self.request("GET", path, &headers, None)?).await?;
        if response.status() != 200 {
            let status = response.status();
            let body = response.into_body().collect().await?.to_bytes();
            return Err(format!("event stream answered {status}: {}", String::from_utf8_lossy(&body)).into());
        }
        Ok(Events { body: response.into_body(), buffer: String::new() })
    }
}

/// One server-sent event.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Event {
    pub event: String,
    pub id: String,
    pub data: String,
}

impl Event {
    pub fn json(&self) -> Result<serde_json::Value> {
        Ok(serde_json::from_str(&self.data)?)
    }
}

/// A stream of events being read.
pub struct Events {
    body: Incoming,
    buffer: String,
}

impl Events {
    fn parse(block: &str) -> Option<Event> {
        let mut event = Event::default();
        let mut any = false;
        for line in block.lines() {
            let (field, value) = line.split_once(':').unwrap_or((line, ""));
            let value = value.strip_prefix(' ').unwrap_or(value);
            match field {
                "event" => event.event = value.to_owned(),
                "id" => event.id = value.to_owned(),
                "data" => {
                    if !event.data.is_empty() {
                        event.data.push('\n');
                    }
                    event.data.push_str(value);
                }
                _ => continue,
            }
            any = true;
        }
        any.then_some(event)
    }

    /// The next event (comments and keep-alives skipped); `None` when the server
    /// ended the stream. Errors after [`GUARD`] without one.
    pub async fn next(&mut self) -> Result<Option<Event>> {
        loop {
            if let Some(at) = self.buffer.find("\n\n") {
                let block: String = self.buffer.drain(..at + 2).collect();
                if let Some(event) = Self::parse(&block) {
                    return Ok(Some(event));
                }
                continue;
            }
            match tokio::time::timeout(GUARD, self.body.frame()).await? {
                None => return Ok(None),
                Some(frame) => {
                    if let Ok(data) = frame?.into_data() {
                        self.buffer.push_str(&String::from_utf8_lossy(&data));
                    }
                }
            }
        }
    }

    /// The next `n` events.
    pub async fn take(&mut self, n: usize) -> Result<Vec<Event>> {
        let mut out = Vec::with_capacity(n);
        while out.len() < n {
            match self.next().await? {
                Some(event) => out.push(event),
                None => return Err(format!("stream ended after {} of {n} events", out.len()).into()),
            }
        }
        Ok(out)
    }
}

/// Opens a connection with `open` (a request that stops before its body ends)
/// and returns it once that request holds its tenant's only permit, which
/// `probe` sees as a 429 on a request of its own.
///
/// The two race: when the probe's request holds the permit at the moment the
/// stalled one arrives, the stalled one is the request turned away (its
/// connection gets an answer). That case starts over on a fresh connection.
pub async fn stall_holding_the_permit<F, Fut>(probe: &Client, open: F) -> Result<TcpStream>
where
    F: Fn() -> Fut,
    Fut: std::future::Future<Output = Result<TcpStream>>,
{
    for _attempt in 0..20 {
        let stalled = open().await?;
        for _ in 0..500 {
            if probe.get("/v1/conversations").await?.status == 429 {
                return Ok(stalled);
            }
            let mut byte = [0u8; 1];
            match stalled.try_read(&mut byte) {
                // An answer (or a closed connection): the stalled request was turned away.
                Ok(_) => break,
                Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
                Err(e) => return Err(e.into()),
            }
            tokio::time::sleep(Duration::from_millis(10)).await;
        }
    }
    Err("the stalled request never held the permit".into())
}
