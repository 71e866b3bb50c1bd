//! `stowage serve`: the store over HTTP (the `stowage-server` crate).
//!
//! Reads the `[server]` table of the same configuration file, opens the store
//! (`--store`, else `server.store`, else the default), prints one line
//! `listening on URL` to standard output once the port is bound, and serves until
//! SIGTERM or SIGINT, then shuts down gracefully.

use std::io::Write as _;
use std::process::ExitCode;

use anyhow::Context as _;
use stowage_server::{ServeError, Server, ServerConfig};

use crate::context::{Context, bad_input};

pub async fn serve(ctx: &Context, listen: Option<String>) -> anyhow::Result<ExitCode> {
    let mut config = ServerConfig::load(ctx.config.source.as_deref()).map_err(|e| bad_input(e.to_string()))?;
    if let Some(listen) = listen {
        config.listen =
            listen.parse().map_err(|_| bad_input(format!("--listen {listen}: not an address like 127.0.0.1:7373")))?;
    }
    let store_name = ctx.global.store.clone().or_else(|| config.store.clone());
    let store = ctx.open_store(store_name.as_deref()).await?;
    let server = match Server::bind(config, store).await {
        Ok(server) => server,
        Err(ServeError::Config(e)) => return Err(bad_input(e.to_string())),
        Err(e) => return Err(e).context("starting the server"),
    };
    let mut stdout = std::io::stdout().lock();
    writeln!(stdout, "listening on {}://{}", server.scheme(), server.local_addr())?;
    stdout.flush()?;
    drop(stdout);
    server.run(stowage_server::shutdown::signal()).await.context("serving")?;
    Ok(ExitCode::SUCCESS)
}
