//! Typed internal errors and their `ur_result_t` codes, in one place.

use ur_api::{Error, HandleKind, LaunchLimit};

use crate::sys::*;

/// The kinds of handle.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `ur_adapter_handle_t`.
    Adapter,
    /// `ur_platform_handle_t`.
    Platform,
    /// `ur_device_handle_t`.
    Device,
    /// `ur_context_handle_t`.
    Context,
    /// `ur_mem_handle_t`.
    Mem,
    /// `ur_queue_handle_t`.
    Queue,
    /// `ur_event_handle_t`.
    Event,
    /// `ur_usm_pool_handle_t`.
    Pool,
    /// `ur_program_handle_t`.
    Program,
    /// `ur_kernel_handle_t`.
    Kernel,
}

impl Kind {
    /// The result of a handle that is not a live object of this kind.
    pub fn invalid(self) -> ur_result_t {
        let kind = match self {
            Kind::Adapter | Kind::Pool => return UR_RESULT_ERROR_INVALID_NULL_HANDLE,
            Kind::Platform => HandleKind::Platform,
            Kind::Device => HandleKind::Device,
            Kind::Context => HandleKind::Context,
            Kind::Mem => HandleKind::Buffer,
            Kind::Queue => HandleKind::Queue,
            Kind::Event => HandleKind::Event,
            Kind::Program => HandleKind::Program,
            Kind::Kernel => HandleKind::Kernel,
        };
        invalid_handle(kind)
    }
}

/// Every failure of the ABI layer; each maps to one `ur_result_t`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CapiError {
    /// A handle argument was null.
    NullHandle,
    /// A required pointer argument was null.
    NullPointer,
    /// A handle that is not a live object of ours of the expected kind
    /// (released, stale, foreign, or of another kind).
    Invalid(Kind),
    /// An argument value is out of its range.
    InvalidValue,
    /// A size does not fit (info queries, regions).
    InvalidSize,
    /// A wait list whose count and pointer disagree.
    InvalidWaitList,
    /// An enumeration value this adapter does not know.
    UnsupportedEnumeration,
    /// An enumeration value outside the enumeration (`INVALID_ENUMERATION`).
    InvalidEnumeration,
    /// A buffer or region size out of range (`INVALID_BUFFER_SIZE`): zero,
    /// larger than a device of the context allocates, or past its parent.
    InvalidBufferSize,
    /// A memory object of another context than the command's queue.
    WrongContext,
    /// An entry point or option the project cannot support.
    Unsupported,
    /// A program is not built (kernels need a built program).
    NotBuilt,
    /// A program's module is not SPIR-V, or no binary fits the device.
    InvalidBinary,
    /// A program build failed (its log is kept for the caller).
    BuildFailed,
    /// A launch's dimension count is not 1, 2 or 3.
    WorkDimension,
    /// A kernel argument index past the kernel's arguments.
    ArgIndex,
    /// A by-value kernel argument without bytes.
    ArgSize,
    /// An error of the project's runtime.
    Api(Error),
}

impl From<Error> for CapiError {
    fn from(e: Error) -> Self {
        CapiError::Api(e)
    }
}

/// The result code of an invalid handle of `kind`.
pub fn invalid_handle(kind: HandleKind) -> ur_result_t {
    match kind {
        HandleKind::Platform => UR_RESULT_ERROR_INVALID_PLATFORM,
        HandleKind::Device => UR_RESULT_ERROR_INVALID_DEVICE,
        HandleKind::Context => UR_RESULT_ERROR_INVALID_CONTEXT,
        HandleKind::Buffer => UR_RESULT_ERROR_INVALID_MEM_OBJECT,
        HandleKind::Queue => UR_RESULT_ERROR_INVALID_QUEUE,
        HandleKind::Event => UR_RESULT_ERROR_INVALID_EVENT,
        HandleKind::Program => UR_RESULT_ERROR_INVALID_PROGRAM,
        HandleKind::Kernel => UR_RESULT_ERROR_INVALID_KERNEL,
        HandleKind::UsmPointer => UR_RESULT_ERROR_INVALID_MEM_OBJECT,
    }
}

/// The result code of a runtime error.
pub fn api_result(e: &Error) -> ur_result_t {
    match e {
        Error::InvalidHandle { kind } => invalid_handle(*kind),
        Error::WrongContext { .. } => UR_RESULT_ERROR_INVALID_CONTEXT,
        Error::NotAccessible { .. } => UR_RESULT_ERROR_INVALID_OPERATION,
        Error::InUse { .. } => UR_RESULT_ERROR_HANDLE_OBJECT_IN_USE,
        Error::DeviceNotInContext => UR_RESULT_ERROR_INVALID_DEVICE,
        Error::InvalidSize { .. } => UR_RESULT_ERROR_INVALID_SIZE,
        Error::OutOfBounds { .. } => UR_RESULT_ERROR_INVALID_SIZE,
        Error::InvalidAlignment { .. } => UR_RESULT_ERROR_UNSUPPORTED_ALIGNMENT,
        Error::InvalidValue(_) => UR_RESULT_ERROR_INVALID_VALUE,
        Error::LaunchLimit {
            limit: LaunchLimit::WorkGroupSize,
            ..
        } => UR_RESULT_ERROR_INVALID_WORK_GROUP_SIZE,
        Error::LaunchLimit {
            limit: LaunchLimit::WorkGroupCount,
            ..
        } => UR_RESULT_ERROR_INVALID_VALUE,
        Error::Unsupported { .. } => UR_RESULT_ERROR_UNSUPPORTED_FEATURE,
        Error::OutOfDeviceMemory => UR_RESULT_ERROR_OUT_OF_DEVICE_MEMORY,
        Error::OutOfHostMemory => UR_RESULT_ERROR_OUT_OF_HOST_MEMORY,
        Error::DeviceLost => UR_RESULT_ERROR_DEVICE_LOST,
        Error::ProgramBuild { .. } => UR_RESULT_ERROR_PROGRAM_BUILD_FAILURE,
        Error::KernelNotFound { .. } => UR_RESULT_ERROR_INVALID_KERNEL_NAME,
        Error::InvalidKernelArgs(_) => UR_RESULT_ERROR_INVALID_KERNEL_ARGS,
        Error::ProfilingUnavailable(_) => UR_RESULT_ERROR_PROFILING_INFO_NOT_AVAILABLE,
        Error::CommandFailed(_) => UR_RESULT_ERROR_IN_EVENT_LIST_EXEC_STATUS,
        _ => UR_RESULT_ERROR_ADAPTER_SPECIFIC,
    }
}

impl CapiError {
    /// The `ur_result_t` this error is reported as.
    pub fn code(&self) -> ur_result_t {
        match self {
            CapiError::NullHandle => UR_RESULT_ERROR_INVALID_NULL_HANDLE,
            CapiError::NullPointer => UR_RESULT_ERROR_INVALID_NULL_POINTER,
            CapiError::Invalid(kind) => kind.invalid(),
            CapiError::InvalidValue => UR_RESULT_ERROR_INVALID_VALUE,
            CapiError::InvalidSize => UR_RESULT_ERROR_INVALID_SIZE,
            CapiError::InvalidWaitList => UR_RESULT_ERROR_INVALID_EVENT_WAIT_LIST,
            CapiError::UnsupportedEnumeration => UR_RESULT_ERROR_UNSUPPORTED_ENUMERATION,
            CapiError::InvalidEnumeration => UR_RESULT_ERROR_INVALID_ENUMERATION,
            CapiError::InvalidBufferSize => UR_RESULT_ERROR_INVALID_BUFFER_SIZE,
            CapiError::WrongContext => UR_RESULT_ERROR_INVALID_CONTEXT,
            CapiError::Unsupported => UR_RESULT_ERROR_UNSUPPORTED_FEATURE,
            CapiError::NotBuilt => UR_RESULT_ERROR_INVALID_PROGRAM_EXECUTABLE,
            CapiError::InvalidBinary => UR_RESULT_ERROR_INVALID_BINARY,
            CapiError::BuildFailed => UR_RESULT_ERROR_PROGRAM_BUILD_FAILURE,
            CapiError::WorkDimension => UR_RESULT_ERROR_INVALID_WORK_DIMENSION,
            CapiError::ArgIndex => UR_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_INDEX,
            CapiError::ArgSize => UR_RESULT_ERROR_INVALID_KERNEL_ARGUMENT_SIZE,
            CapiError::Api(e) => api_result(e),
        }
    }
}

/// The `ur_backend_t` a platform of a project backend reports: the UR
/// backend whose device images and semantics match it. libsycl picks
/// device images by this value (`spir64` for OpenCL and Level Zero, PTX
/// for CUDA), and SYCL tools name devices by it (`opencl:cpu:0`). The
/// project's own backends (native host kernels, the simulator, out-of-tree
/// adapters) run no SYCL device image: "native CPU", the host-only UR
/// backend.
pub fn ur_backend(b: ur_api::Backend) -> ur_backend_t {
    match b {
        ur_api::Backend::OpenCl => UR_BACKEND_OPENCL,
        ur_api::Backend::LevelZero => UR_BACKEND_LEVEL_ZERO,
        ur_api::Backend::Cuda => UR_BACKEND_CUDA,
        ur_api::Backend::Native | ur_api::Backend::Sim | ur_api::Backend::Other(_) => UR_BACKEND_NATIVE_CPU,
    }
}

/// The device-image targets (`ur_device_binary_t::pDeviceTargetSpec`, as
/// libsycl names them) a device of `backend` that accepts `formats` runs,
/// best first.
pub fn binary_targets(backend: ur_backend_t, formats: ur_api::ProgramFormats) -> &'static [&'static [u8]] {
    use ur_api::ProgramFormats;
    match backend {
        UR_BACKEND_OPENCL | UR_BACKEND_LEVEL_ZERO if formats.contains(ProgramFormats::SPIRV) => &[b"spir64"],
        UR_BACKEND_CUDA if formats.contains(ProgramFormats::PTX) => &[b"nvptx64"],
        _ => &[],
    }
}

/// The UR device type of a project device type.
pub fn device_type(t: ur_api::DeviceType) -> ur_device_type_t {
    match t {
        ur_api::DeviceType::Cpu => UR_DEVICE_TYPE_CPU,
        ur_api::DeviceType::Gpu => UR_DEVICE_TYPE_GPU,
        ur_api::DeviceType::Accelerator => UR_DEVICE_TYPE_FPGA,
        ur_api::DeviceType::Custom => UR_DEVICE_TYPE_CUSTOM,
    }
}

/// Does a `urDeviceGet` type filter select a device of this type?
pub fn type_selects(filter: ur_device_type_t, t: ur_api::DeviceType) -> bool {
    filter == UR_DEVICE_TYPE_ALL
        || filter == device_type(t)
        || (filter == UR_DEVICE_TYPE_DEFAULT)
        || (filter == UR_DEVICE_TYPE_MCA && t == ur_api::DeviceType::Accelerator)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn handles_map_to_their_invalid_codes() {
        assert_eq!(CapiError::Invalid(Kind::Queue).code(), UR_RESULT_ERROR_INVALID_QUEUE);
        assert_eq!(
            CapiError::Api(Error::InvalidHandle {
                kind: HandleKind::Event
            })
            .code(),
            UR_RESULT_ERROR_INVALID_EVENT
        );
        assert_eq!(CapiError::Unsupported.code(), UR_RESULT_ERROR_UNSUPPORTED_FEATURE);
    }

    #[test]
    fn backends_and_image_targets() {
        use ur_api::{Backend, ProgramFormats};
        assert_eq!(ur_backend(Backend::OpenCl), UR_BACKEND_OPENCL);
        assert_eq!(ur_backend(Backend::Native), UR_BACKEND_NATIVE_CPU);
        assert_eq!(
            binary_targets(UR_BACKEND_OPENCL, ProgramFormats::SPIRV),
            &[b"spir64" as &[u8]]
        );
        // PoCL and rusticl here take OpenCL C but no SPIR-V: no image fits.
        assert!(binary_targets(UR_BACKEND_OPENCL, ProgramFormats::OPENCL_C).is_empty());
        assert!(binary_targets(UR_BACKEND_NATIVE_CPU, ProgramFormats::HOST).is_empty());
    }

    #[test]
    fn type_filter() {
        assert!(type_selects(UR_DEVICE_TYPE_ALL, ur_api::DeviceType::Gpu));
        assert!(type_selects(UR_DEVICE_TYPE_CPU, ur_api::DeviceType::Cpu));
        assert!(!type_selects(UR_DEVICE_TYPE_GPU, ur_api::DeviceType::Cpu));
    }
}
