//! A small kernel library keyed by name, with one source per program format:
//! a [`HostKernelLibrary`] for host-kernel devices, OpenCL C and CUDA C source
//! for the others. [`source_for`] picks by the device's program formats.
//!
//! Every kernel works on `uint`/`u32` elements, one work item per element,
//! indexed by the global id (host kernels add the launch offset the same way):
//!
//! | name         | arguments                                | effect            |
//! |--------------|------------------------------------------|-------------------|
//! | `fill_index` | `uint* out`                              | `out[i] = i`      |
//! | `add_one`    | `uint* buf`                              | `buf[i] += 1`     |
//! | `vec_add`    | `const uint* a, const uint* b, uint* c`  | `c[i] = a[i]+b[i]`|
//! | `add_scalar` | `uint* buf, uint k`                      | `buf[i] += k`     |
//!
//! ```
//! use ur_api::{ProgramFormats, ProgramSource};
//! let src = ur_conformance::kernels::source_for(ProgramFormats::HOST).unwrap();
//! assert!(matches!(src, ProgramSource::Host(_)));
//! assert!(ur_conformance::kernels::source_for(ProgramFormats::empty()).is_none());
//! ```

use std::sync::Arc;

use ur_api::{HostArgs, HostKernelLibrary, ProgramFormats, ProgramSource};

/// Every kernel of the library with its argument count.
pub const KERNELS: [(&str, usize); 4] = [("fill_index", 1), ("add_one", 1), ("vec_add", 3), ("add_scalar", 2)];

/// The OpenCL C version of the library.
pub const OPENCL_C: &str = include_str!("../kernels/kernels.cl");

/// [`OPENCL_C`] compiled to SPIR-V 1.0 (`kernels/README.md` says how; the
/// OpenCL adapter's `spirv` test checks it is what the tools make).
pub const SPIRV: &[u8] = include_bytes!("../kernels/kernels.spv");

/// The CUDA C version of the library (launch sizes are multiples of the block).
pub const CUDA_C: &str = r#"
extern "C" __global__ void fill_index(unsigned int* out) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    out[i] = i;
}
extern "C" __global__ void add_one(unsigned int* buf) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    buf[i] += 1u;
}
extern "C" __global__ void vec_add(const unsigned int* a, const unsigned int* b, unsigned int* c) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    c[i] = a[i] + b[i];
}
extern "C" __global__ void add_scalar(unsigned int* buf, unsigned int k) {
    unsigned int i = blockIdx.x * blockDim.x + threadIdx.x;
    buf[i] += k;
}
"#;

/// The global ids of a 1-D launch (offset included).
fn ids(args: &HostArgs<'_>) -> std::ops::Range<usize> {
    let start = args.range.offset[0];
    start..start + args.range.global[0]
}

fn at<T>(slice: &[T], i: usize, what: &str) -> Result<usize, String> {
    if i < slice.len() {
        Ok(i)
    } else {
        Err(format!("{what}: index {i} outside {} elements", slice.len()))
    }
}

/// The host-kernel version of the library.
pub fn host_library() -> HostKernelLibrary {
    let mut lib = HostKernelLibrary::new();
    lib.register("fill_index", 1, |args: &HostArgs<'_>| {
        // SAFETY: the adapter grants the kernel exclusive access to its one buffer.
        let out = unsafe { args.mem_mut::<u32>(0)? };
        for i in ids(args) {
            out[at(out, i, "out")?] = i as u32;
        }
        Ok(())
    });
    lib.register("add_one", 1, |args: &HostArgs<'_>| {
        // SAFETY: the adapter grants the kernel exclusive access to its one buffer.
        let buf = unsafe { args.mem_mut::<u32>(0)? };
        for i in ids(args) {
            let j = at(buf, i, "buf")?;
            buf[j] = buf[j].wrapping_add(1);
        }
        Ok(())
    });
    lib.register("vec_add", 3, |args: &HostArgs<'_>| {
        // SAFETY: the suite passes three distinct allocations, so the three
        // slices never alias; the adapter grants access for the launch.
        let (a, b, c) = unsafe {
            (
                args.mem_mut::<u32>(0)?,
                args.mem_mut::<u32>(1)?,
                args.mem_mut::<u32>(2)?,
            )
        };
        for i in ids(args) {
            c[at(c, i, "c")?] = a[at(a, i, "a")?].wrapping_add(b[at(b, i, "b")?]);
        }
        Ok(())
    });
    lib.register("add_scalar", 2, |args: &HostArgs<'_>| {
        let k: u32 = args.scalar(1)?;
        // SAFETY: the adapter grants the kernel exclusive access to its one buffer.
        let buf = unsafe { args.mem_mut::<u32>(0)? };
        for i in ids(args) {
            let j = at(buf, i, "buf")?;
            buf[j] = buf[j].wrapping_add(k);
        }
        Ok(())
    });
    lib
}

/// The library in the first format of `formats` it has a source for
/// (host, then OpenCL C, then CUDA C), or `None`.
pub fn source_for(formats: ProgramFormats) -> Option<ProgramSource> {
    if formats.contains(ProgramFormats::HOST) {
        Some(ProgramSource::Host(Arc::new(host_library())))
    } else if formats.contains(ProgramFormats::OPENCL_C) {
        Some(ProgramSource::OpenClC(OPENCL_C.to_owned()))
    } else if formats.contains(ProgramFormats::CUDA_C) {
        Some(ProgramSource::CudaC(CUDA_C.to_owned()))
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ur_api::{HostArg, NdRange};

    fn run(name: &str, args: &[HostArg<'_>], n: usize) -> Result<(), String> {
        let lib = host_library();
        let k = lib.get(name).expect("registered");
        assert_eq!(k.arity, args.len());
        (k.func)(&HostArgs {
            range: NdRange::d1(n),
            args,
        })
    }

    fn mem(v: &mut [u32]) -> HostArg<'static> {
        HostArg::Mem {
            ptr: v.as_mut_ptr().cast(),
            len: std::mem::size_of_val(v),
        }
    }

    #[test]
    fn host_kernels_compute() {
        let mut out = vec![0u32; 8];
        run("fill_index", &[mem(&mut out)], 8).unwrap();
        assert_eq!(out, (0..8).collect::<Vec<u32>>());
        run("add_one", &[mem(&mut out)], 8).unwrap();
        assert_eq!(out, (1..9).collect::<Vec<u32>>());
        let k = 5u32.to_ne_bytes();
        run("add_scalar", &[mem(&mut out), HostArg::Scalar(&k)], 8).unwrap();
        assert_eq!(out, (6..14).collect::<Vec<u32>>());
        let mut a = vec![1u32; 8];
        let mut c = vec![0u32; 8];
        run("vec_add", &[mem(&mut a), mem(&mut out), mem(&mut c)], 8).unwrap();
        assert_eq!(c, (7..15).collect::<Vec<u32>>());
    }

    #[test]
    fn out_of_range_is_an_error_not_ub() {
        let mut out = vec![0u32; 4];
        assert!(run("fill_index", &[mem(&mut out)], 8).is_err());
    }

    #[test]
    fn every_source_names_every_kernel() {
        for (name, _) in KERNELS {
            assert!(host_library().get(name).is_some());
            assert!(OPENCL_C.contains(&format!("void {name}(")));
            assert!(CUDA_C.contains(&format!("void {name}(")));
        }
    }
}
