//! WASI for adapters, and the `filesystem` capability.
//!
//! Every adapter is linked against deny-by-default WASI preview 2: no
//! environment, arguments or stdio content, and sockets that refuse every
//! connection. The `filesystem` capability adds one preopened directory, the
//! store's adapter directory, at `/data`. Inside it an adapter may not create
//! symbolic or hard links: a link is the one file-system object that points
//! somewhere else, and the host never wants to meet one in a store's directories
//! (WASI would not follow it out of `/data`, but a host tool or a later layout
//! change might). Both calls fail with `not-permitted`.
//!
//! With the cargo feature `fault-injection` (tests only), [`power_loss`] can put
//! a simulated disk under the preopen that loses what was never fsynced.

#[cfg(feature = "fault-injection")]
pub mod power_loss;

use std::path::Path;

use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::filesystem::Descriptor;
use wasmtime_wasi::p2::bindings::sync::filesystem::types::{ErrorCode, PathFlags};
use wasmtime_wasi::{FsPerms, WasiCtxBuilder, WasiView};

/// Where the adapter sees its directory.
pub const GUEST_ROOT: &str = "/data";

/// The WASI filesystem interface as wasmtime-wasi 48 defines it (guests importing
/// any 0.2.x version resolve to it).
const FILESYSTEM_TYPES: &str = "wasi:filesystem/types@0.2.12";

/// Links deny-by-default WASI preview 2, with links refused.
pub fn add_to_linker<T: WasiView + 'static>(linker: &mut Linker<T>) -> wasmtime::Result<()> {
    wasmtime_wasi::p2::add_to_linker_sync(linker)?;
    linker.allow_shadowing(true);
    let mut types = linker.instance(FILESYSTEM_TYPES)?;
    types.func_wrap(
        "[method]descriptor.symlink-at",
        |_store, (_dir, _old, _new): (Resource<Descriptor>, String, String)| {
            Ok((Err::<(), ErrorCode>(ErrorCode::NotPermitted),))
        },
    )?;
    types.func_wrap(
        "[method]descriptor.link-at",
        |_store,
         (_dir, _flags, _old, _new_dir, _new): (
            Resource<Descriptor>,
            PathFlags,
            String,
            Resource<Descriptor>,
            String,
        )| { Ok((Err::<(), ErrorCode>(ErrorCode::NotPermitted),)) },
    )?;
    linker.allow_shadowing(false);
    Ok(())
}

/// Grants the filesystem capability: `dir` becomes the adapter's `/data`.
pub fn preopen(wasi: &mut WasiCtxBuilder, dir: &Path) -> wasmtime::Result<()> {
    wasi.preopened_dir(dir, GUEST_ROOT, FsPerms::ReadWrite)?;
    Ok(())
}
