//! Typed internal errors and their `ur_result_t` codes, in one place.

use ur_api::{Error, HandleKind};

use crate::objects::Kind;
use crate::sys::*;

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
    /// An entry point or option the project cannot support.
    Unsupported,
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
            CapiError::Unsupported => UR_RESULT_ERROR_UNSUPPORTED_FEATURE,
            CapiError::Api(e) => api_result(e),
        }
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
    fn type_filter() {
        assert!(type_selects(UR_DEVICE_TYPE_ALL, ur_api::DeviceType::Gpu));
        assert!(type_selects(UR_DEVICE_TYPE_CPU, ur_api::DeviceType::Cpu));
        assert!(!type_selects(UR_DEVICE_TYPE_GPU, ur_api::DeviceType::Cpu));
    }
}
