//! Loads Intel's `libur_loader.so` with `UR_ADAPTERS_FORCE_LOAD` naming
//! this crate's library and calls through it: handles, reference counts
//! and error codes against the C API's rules. Skips (with the reason)
//! where the wheels are not unpacked; `UR_REQUIRE_SYCL=1` makes that fail.

mod common;

use std::ffi::c_void;
use std::path::PathBuf;
use std::ptr::null_mut;

use libloading::{Library, Symbol};
use ur_adapter_rust::sys::*;

fn loader() -> Option<PathBuf> {
    let home = std::env::var_os("HOME").map(PathBuf::from)?;
    let w = home.join(".cache/unified-runtime/wheels/intel-cmplr-lib-ur-2026.2.0/intel_cmplr_lib_ur-2026.2.0.data/data/lib/libur_loader.so");
    w.is_file().then_some(w)
}

macro_rules! sym {
    ($lib:expr, $name:literal, $ty:ty) => {{
        // SAFETY: the symbol is the UR entry point of that name, with the
        // signature of the generated pfn type.
        let s: Symbol<'_, $ty> = unsafe { $lib.get(concat!($name, "\0").as_bytes()) }.expect($name);
        s.expect(concat!($name, " present"))
    }};
}

#[test]
fn calls_through_the_ur_loader() {
    let Some(path) = loader() else {
        assert!(
            std::env::var("UR_REQUIRE_SYCL").as_deref() != Ok("1"),
            "libur_loader.so not unpacked"
        );
        eprintln!("skipped: libur_loader.so not unpacked (cargo xtask setup)");
        return;
    };
    let so = common::adapter_library().expect("the adapter library builds");
    std::env::set_var("UR_ADAPTERS_FORCE_LOAD", &so);
    // The loader needs Intel's compiler runtime (intel-cmplr-lib-rt): open
    // those first, by path, so no LD_LIBRARY_PATH is needed.
    let rt = path
        .ancestors()
        .nth(5)
        .unwrap()
        .join("intel-cmplr-lib-rt-2026.2.0/intel_cmplr_lib_rt-2026.2.0.data/data/lib");
    let _deps: Vec<Library> = ["libintlc.so.5", "libirng.so", "libimf.so", "libsvml.so"]
        .iter()
        // SAFETY: Intel's runtime libraries, whose initialisers are sound to run.
        .map(|n| unsafe { Library::new(rt.join(n)) }.expect("intel-cmplr-lib-rt library opens"))
        .collect();
    // SAFETY: the UR loader's initialisers are sound to run.
    let lib = unsafe { Library::new(&path) }.expect("libur_loader.so opens");
    type Init = Option<unsafe extern "C" fn(u32, *mut c_void) -> ur_result_t>;
    let init = sym!(lib, "urLoaderInit", Init);
    let adapter_get = sym!(lib, "urAdapterGet", ur_pfnAdapterGet_t);
    let adapter_release = sym!(lib, "urAdapterRelease", ur_pfnAdapterRelease_t);
    let platform_get = sym!(lib, "urPlatformGet", ur_pfnPlatformGet_t);
    let device_get = sym!(lib, "urDeviceGet", ur_pfnDeviceGet_t);
    let context_create = sym!(lib, "urContextCreate", ur_pfnContextCreate_t);
    let context_retain = sym!(lib, "urContextRetain", ur_pfnContextRetain_t);
    let context_release = sym!(lib, "urContextRelease", ur_pfnContextRelease_t);
    let context_info = sym!(lib, "urContextGetInfo", ur_pfnContextGetInfo_t);
    let queue_create = sym!(lib, "urQueueCreate", ur_pfnQueueCreate_t);
    let queue_release = sym!(lib, "urQueueRelease", ur_pfnQueueRelease_t);
    let buffer_create = sym!(lib, "urMemBufferCreate", ur_pfnMemBufferCreate_t);
    let mem_release = sym!(lib, "urMemRelease", ur_pfnMemRelease_t);
    let write = sym!(lib, "urEnqueueMemBufferWrite", ur_pfnEnqueueMemBufferWrite_t);
    let read = sym!(lib, "urEnqueueMemBufferRead", ur_pfnEnqueueMemBufferRead_t);
    let event_wait = sym!(lib, "urEventWait", ur_pfnEventWait_t);
    let event_release = sym!(lib, "urEventRelease", ur_pfnEventRelease_t);
    let program_il = sym!(lib, "urProgramCreateWithIL", ur_pfnProgramCreateWithIL_t);
    let sampler_create = sym!(lib, "urSamplerCreate", ur_pfnSamplerCreate_t);

    // SAFETY: every call below passes arguments as the UR specification
    // asks: live out-pointers of the right types and counts.
    unsafe {
        assert_eq!(init(0, null_mut()), UR_RESULT_SUCCESS);
        let mut n = 0u32;
        assert_eq!(adapter_get(0, null_mut(), &mut n), UR_RESULT_SUCCESS);
        assert_eq!(n, 1, "exactly our adapter is loaded");
        let mut adapter = null_mut();
        assert_eq!(adapter_get(1, &mut adapter, null_mut()), UR_RESULT_SUCCESS);
        let mut np = 0u32;
        assert_eq!(platform_get(adapter, 0, null_mut(), &mut np), UR_RESULT_SUCCESS);
        assert!(
            np >= 1,
            "a platform is always there (the native one where nothing else is)"
        );
        let mut platforms = vec![null_mut(); np as usize];
        assert_eq!(
            platform_get(adapter, np, platforms.as_mut_ptr(), null_mut()),
            UR_RESULT_SUCCESS
        );
        let mut dev = null_mut();
        assert_eq!(
            device_get(platforms[0], UR_DEVICE_TYPE_ALL, 1, &mut dev, null_mut()),
            UR_RESULT_SUCCESS
        );
        // A bad size is an error code, not a crash.
        assert_eq!(
            device_get(platforms[0], UR_DEVICE_TYPE_ALL, 0, &mut dev, null_mut()),
            UR_RESULT_ERROR_INVALID_SIZE
        );

        let mut ctx = null_mut();
        assert_eq!(context_create(1, &dev, std::ptr::null(), &mut ctx), UR_RESULT_SUCCESS);
        let refs = |c| {
            let mut r = 0u32;
            let rc = context_info(
                c,
                UR_CONTEXT_INFO_REFERENCE_COUNT,
                4,
                (&mut r as *mut u32).cast(),
                null_mut(),
            );
            (rc, r)
        };
        assert_eq!(refs(ctx), (UR_RESULT_SUCCESS, 1));
        // A module that is not SPIR-V is refused when the program is made.
        let il = [0u8; 16];
        let mut program = null_mut();
        assert_eq!(
            program_il(ctx, il.as_ptr().cast(), il.len(), std::ptr::null(), &mut program),
            UR_RESULT_ERROR_INVALID_BINARY
        );
        // An entry point the project cannot support: a generated stub
        // answers UNSUPPORTED_FEATURE (a null slot would be UNINITIALIZED).
        let desc = ur_sampler_desc_t::default();
        let mut sampler = null_mut();
        assert_eq!(
            sampler_create(ctx, &desc, &mut sampler),
            UR_RESULT_ERROR_UNSUPPORTED_FEATURE
        );
        assert_eq!(context_retain(ctx), UR_RESULT_SUCCESS);
        assert_eq!(refs(ctx), (UR_RESULT_SUCCESS, 2));

        let mut q = null_mut();
        assert_eq!(queue_create(ctx, dev, std::ptr::null(), &mut q), UR_RESULT_SUCCESS);
        let mut buf = null_mut();
        assert_eq!(
            buffer_create(ctx, UR_MEM_FLAG_READ_WRITE, 64, std::ptr::null(), &mut buf),
            UR_RESULT_SUCCESS
        );
        let data = [7u8; 64];
        let mut ev = null_mut();
        assert_eq!(
            write(q, buf, false, 0, 64, data.as_ptr().cast(), 0, std::ptr::null(), &mut ev),
            UR_RESULT_SUCCESS
        );
        let mut back = [0u8; 64];
        assert_eq!(
            read(q, buf, true, 0, 64, back.as_mut_ptr().cast(), 1, &ev, null_mut()),
            UR_RESULT_SUCCESS
        );
        assert_eq!(back, data);
        assert_eq!(event_wait(1, &ev), UR_RESULT_SUCCESS);
        assert_eq!(event_release(ev), UR_RESULT_SUCCESS);
        // A released event is stale: an error code, never a dereference.
        assert_eq!(event_release(ev), UR_RESULT_ERROR_INVALID_EVENT);
        assert_eq!(event_wait(1, &ev), UR_RESULT_ERROR_INVALID_EVENT);
        // A wait list whose count and pointer disagree.
        assert_eq!(event_wait(0, &ev), UR_RESULT_ERROR_INVALID_EVENT_WAIT_LIST);

        assert_eq!(mem_release(buf), UR_RESULT_SUCCESS);
        assert_eq!(mem_release(buf), UR_RESULT_ERROR_INVALID_MEM_OBJECT);
        assert_eq!(queue_release(q), UR_RESULT_SUCCESS);
        assert_eq!(context_release(ctx), UR_RESULT_SUCCESS);
        assert_eq!(refs(ctx), (UR_RESULT_SUCCESS, 1));
        assert_eq!(context_release(ctx), UR_RESULT_SUCCESS);
        assert_eq!(
            refs(ctx).0,
            UR_RESULT_ERROR_INVALID_CONTEXT,
            "a released context is stale"
        );
        // A handle of the wrong kind (a device where a context is expected).
        assert_eq!(context_retain(dev.cast()), UR_RESULT_ERROR_INVALID_CONTEXT);
        assert_eq!(adapter_release(adapter), UR_RESULT_SUCCESS);
    }
}
