//! The WASI functions the simulated disk stands behind, shadowing wasmtime-wasi's
//! own definitions of `wasi:filesystem/types`.
//!
//! An instance without a [`PowerLoss`] handle gets wasmtime-wasi's behaviour
//! exactly: every shadow forwards to the same `HostDescriptor` implementation
//! the linker would otherwise call. With a handle, each shadow is first a crash
//! point; `sync` and `sync-data` then record durability in the model instead of
//! reaching the real disk (which also keeps thousands of simulated cuts fast).

use wasmtime::StoreContextMut;
use wasmtime::component::{Linker, Resource};
use wasmtime_wasi::WasiView;
use wasmtime_wasi::filesystem::{Descriptor, WasiFilesystemCtxView, WasiFilesystemView};
use wasmtime_wasi::p2::bindings::sync::filesystem::types::{
    DescriptorFlags, ErrorCode, Filesize, Host, HostDescriptor, OpenFlags, PathFlags,
};
use wasmtime_wasi::p2::{DynOutputStream, FsResult};

use super::PowerLoss;
use super::disk::ino_of;
use crate::capability::filesystem::FILESYSTEM_TYPES;

/// How a shadow finds the instance's handle.
pub type GetPowerLoss<T> = for<'a> fn(&'a mut T) -> Option<&'a PowerLoss>;

type Reply<R> = wasmtime::Result<(Result<R, ErrorCode>,)>;

/// A crash point, then wasmtime-wasi's own implementation.
fn forward<T: WasiView, R>(
    store: &mut StoreContextMut<'_, T>,
    get: GetPowerLoss<T>,
    call: impl FnOnce(&mut WasiFilesystemCtxView<'_>) -> FsResult<R>,
) -> Reply<R> {
    if let Some(handle) = get(store.data_mut()) {
        handle.crash_point(false)?;
    }
    let mut view = store.data_mut().filesystem();
    match call(&mut view) {
        Ok(value) => Ok((Ok(value),)),
        Err(error) => Ok((Err(Host::convert_error_code(&mut view, error)?),)),
    }
}

/// `sync`/`sync-data`: recorded by the model when simulating, real otherwise.
fn sync<T: WasiView>(
    store: &mut StoreContextMut<'_, T>,
    get: GetPowerLoss<T>,
    fd: Resource<Descriptor>,
    real: fn(&mut WasiFilesystemCtxView<'_>, Resource<Descriptor>) -> FsResult<()>,
) -> Reply<()> {
    let Some(handle) = get(store.data_mut()).cloned() else {
        return forward(store, get, |view| real(view, fd));
    };
    handle.crash_point(true)?;
    let view = store.data_mut().filesystem();
    let file = match view.table.get(&fd)? {
        Descriptor::File(f) => std::sync::Arc::clone(&f.file),
        Descriptor::Dir(d) => std::sync::Arc::clone(&d.dir),
    };
    match file.metadata() {
        Ok(meta) => {
            handle.synced(ino_of(&meta))?;
            Ok((Ok(()),))
        }
        Err(_) => Ok((Err(ErrorCode::Io),)),
    }
}

/// Shadows the mutating calls of `wasi:filesystem/types` (after
/// `wasmtime_wasi::p2::add_to_linker_sync`); `get` finds the handle.
pub fn add_to_linker<T: WasiView + 'static>(linker: &mut Linker<T>, get: GetPowerLoss<T>) -> wasmtime::Result<()> {
    type Fd = Resource<Descriptor>;
    linker.allow_shadowing(true);
    let mut types = linker.instance(FILESYSTEM_TYPES)?;
    types.func_wrap("[method]descriptor.sync", move |mut store, (fd,): (Fd,)| {
        sync(&mut store, get, fd, |view, fd| HostDescriptor::sync(view, fd))
    })?;
    types.func_wrap("[method]descriptor.sync-data", move |mut store, (fd,): (Fd,)| {
        sync(&mut store, get, fd, |view, fd| HostDescriptor::sync_data(view, fd))
    })?;
    types.func_wrap(
        "[method]descriptor.open-at",
        move |mut store, (fd, path_flags, path, open, flags): (Fd, PathFlags, String, OpenFlags, DescriptorFlags)| {
            forward(&mut store, get, |view| HostDescriptor::open_at(view, fd, path_flags, path, open, flags))
        },
    )?;
    types.func_wrap(
        "[method]descriptor.rename-at",
        move |mut store, (fd, old, new_fd, new): (Fd, String, Fd, String)| {
            forward(&mut store, get, |view| HostDescriptor::rename_at(view, fd, old, new_fd, new))
        },
    )?;
    types.func_wrap("[method]descriptor.unlink-file-at", move |mut store, (fd, path): (Fd, String)| {
        forward(&mut store, get, |view| HostDescriptor::unlink_file_at(view, fd, path))
    })?;
    types.func_wrap("[method]descriptor.create-directory-at", move |mut store, (fd, path): (Fd, String)| {
        forward(&mut store, get, |view| HostDescriptor::create_directory_at(view, fd, path))
    })?;
    types.func_wrap("[method]descriptor.remove-directory-at", move |mut store, (fd, path): (Fd, String)| {
        forward(&mut store, get, |view| HostDescriptor::remove_directory_at(view, fd, path))
    })?;
    types.func_wrap("[method]descriptor.set-size", move |mut store, (fd, size): (Fd, Filesize)| {
        forward(&mut store, get, |view| HostDescriptor::set_size(view, fd, size))
    })?;
    types.func_wrap("[method]descriptor.write", move |mut store, (fd, buf, at): (Fd, Vec<u8>, Filesize)| {
        forward(&mut store, get, |view| HostDescriptor::write(view, fd, buf, at))
    })?;
    types.func_wrap("[method]descriptor.write-via-stream", move |mut store, (fd, at): (Fd, Filesize)| {
        forward::<T, Resource<DynOutputStream>>(&mut store, get, |view| HostDescriptor::write_via_stream(view, fd, at))
    })?;
    types.func_wrap("[method]descriptor.append-via-stream", move |mut store, (fd,): (Fd,)| {
        forward::<T, Resource<DynOutputStream>>(&mut store, get, |view| HostDescriptor::append_via_stream(view, fd))
    })?;
    linker.allow_shadowing(false);
    Ok(())
}
