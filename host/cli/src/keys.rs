//! `stowage rekey`: rotate a store's integrity keys.

use std::process::ExitCode;

use crate::context::{Context, print_json};

pub fn rekey(ctx: &Context) -> anyhow::Result<ExitCode> {
    let config = ctx.store_config(None)?;
    let rotation = stowage::rotate_keys(&config)?;
    if ctx.global.json {
        print_json(&serde_json::json!({
            "store": config.name,
            "key_file": rotation.path,
            "current": rotation.current,
            "ids": rotation.ids,
        }))?;
    } else {
        println!(
            "store {}: key {} is now current in {} (keys held: {:?}); records tagged with older keys \
             still verify; hosts use the new key once they reopen the store",
            config.name,
            rotation.current,
            rotation.path.display(),
            rotation.ids
        );
    }
    Ok(ExitCode::SUCCESS)
}
