//! `urContextSetExtendedDeleter` on every device: the deleters run, in the
//! order they were set and once each, when the context is destroyed: at
//! its last release, or later, when the last object made in it (here a
//! buffer) is released. A null deleter or context is refused.

#![allow(missing_docs)]

use std::ffi::c_void;
use std::ptr::{null, null_mut};
use std::sync::Mutex;

use ur_adapter_rust::sys::*;

mod capi;
use capi::ok;

/// What the deleters saw: (which deleter, its data's tag), in call order.
static CALLS: Mutex<Vec<(u8, usize)>> = Mutex::new(Vec::new());

unsafe extern "C" fn first(data: *mut c_void) {
    CALLS.lock().unwrap().push((1, data as usize));
}

unsafe extern "C" fn second(data: *mut c_void) {
    CALLS.lock().unwrap().push((2, data as usize));
}

fn calls() -> Vec<(u8, usize)> {
    std::mem::take(&mut *CALLS.lock().unwrap())
}

#[test]
fn deleters_run_once_the_context_is_destroyed() {
    let t = capi::table();
    let mut checked = 0;
    for p in capi::platforms_with_host() {
        let d = p.devices[0];
        let tag = 0x1000 + checked;
        // SAFETY: handles of this library, live out-pointers; the deleters
        // only record their data, a tag that is never dereferenced.
        unsafe {
            // Released with nothing made in it: the deleters run at once.
            let mut c = null_mut();
            ok(t.Context.pfnCreate.unwrap()(1, &d, null(), &mut c), "urContextCreate");
            ok(
                t.Context.pfnSetExtendedDeleter.unwrap()(c, Some(first), tag as *mut c_void),
                &format!("{}: urContextSetExtendedDeleter", p.name),
            );
            ok(
                t.Context.pfnSetExtendedDeleter.unwrap()(c, Some(second), (tag + 1) as *mut c_void),
                "second",
            );
            assert_eq!(
                t.Context.pfnSetExtendedDeleter.unwrap()(c, None, null_mut()),
                UR_RESULT_ERROR_INVALID_NULL_POINTER,
                "{}: a null deleter",
                p.name
            );
            ok(t.Context.pfnRetain.unwrap()(c), "urContextRetain");
            ok(t.Context.pfnRelease.unwrap()(c), "urContextRelease");
            assert_eq!(calls(), vec![], "{}: not while a reference is left", p.name);
            ok(t.Context.pfnRelease.unwrap()(c), "urContextRelease");
            assert_eq!(calls(), vec![(1, tag), (2, tag + 1)], "{}: at the last release", p.name);

            // A buffer of it keeps it: the deleter runs with the buffer's release.
            let mut c = null_mut();
            ok(t.Context.pfnCreate.unwrap()(1, &d, null(), &mut c), "urContextCreate");
            ok(
                t.Context.pfnSetExtendedDeleter.unwrap()(c, Some(first), tag as *mut c_void),
                "deleter",
            );
            let mut b = null_mut();
            ok(
                t.Mem.pfnBufferCreate.unwrap()(c, UR_MEM_FLAG_READ_WRITE, 64, null(), &mut b),
                "urMemBufferCreate",
            );
            ok(t.Context.pfnRelease.unwrap()(c), "urContextRelease");
            assert_eq!(calls(), vec![], "{}: the buffer still holds the context", p.name);
            ok(t.Mem.pfnRelease.unwrap()(b), "urMemRelease");
            assert_eq!(calls(), vec![(1, tag)], "{}: destroyed with its last object", p.name);
        }
        checked += 1;
    }
    // SAFETY: a null handle, refused before any use.
    let r = unsafe { t.Context.pfnSetExtendedDeleter.unwrap()(null_mut(), Some(first), null_mut()) };
    assert_eq!(r, UR_RESULT_ERROR_INVALID_NULL_HANDLE);
    eprintln!("{checked} platforms checked");
}
