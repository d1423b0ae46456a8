//! Typed, generational handles of the dyn layer.
//!
//! A handle names its adapter instance (`host`) and a slot in that
//! adapter's table. A released slot's generation changes, so a stale handle
//! never reaches a new object: every use is checked and answers
//! [`Error::InvalidHandle`](crate::Error::InvalidHandle).

use std::fmt;
use std::sync::atomic::{AtomicU32, Ordering};

use slotmap::Key;

use crate::error::HandleKind;

static NEXT_HOST_ID: AtomicU32 = AtomicU32::new(1);

/// A fresh identifier for one adapter instance of the dyn layer.
pub(crate) fn next_host_id() -> u32 {
    NEXT_HOST_ID.fetch_add(1, Ordering::Relaxed)
}

/// What every handle can say about itself.
pub trait Handle: Copy + fmt::Debug {
    /// The kind of object named.
    const KIND: HandleKind;
    /// The adapter instance the handle belongs to.
    fn adapter_id(&self) -> u32;
}

macro_rules! handles {
    ($($(#[$m:meta])* $name:ident / $key:ident => $kind:ident;)*) => {$(
        slotmap::new_key_type! {
            #[doc = concat!("Slot key behind [`", stringify!($name), "`].")]
            pub struct $key;
        }

        $(#[$m])*
        #[derive(Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name {
            pub(crate) host: u32,
            pub(crate) key: $key,
        }

        impl Handle for $name {
            const KIND: HandleKind = HandleKind::$kind;
            fn adapter_id(&self) -> u32 {
                self.host
            }
        }

        impl fmt::Debug for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                let raw = self.key.data().as_ffi();
                write!(f, "{}#{}.{}v{}", HandleKind::$kind, self.host, raw & 0xffff_ffff, raw >> 32)
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                fmt::Debug::fmt(self, f)
            }
        }
    )*};
}

handles! {
    /// Names a platform.
    PlatformId / PlatformKey => Platform;
    /// Names a device.
    DeviceId / DeviceKey => Device;
    /// Names a context.
    ContextId / ContextKey => Context;
    /// Names a buffer or sub-buffer.
    BufferId / BufferKey => Buffer;
    /// Names a queue.
    QueueId / QueueKey => Queue;
    /// Names an event.
    EventId / EventKey => Event;
    /// Names a program.
    ProgramId / ProgramKey => Program;
    /// Names a kernel.
    KernelId / KernelKey => Kernel;
}

/// A place memory can live: a context and one of its devices.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Location {
    /// The context.
    pub context: ContextId,
    /// A device of that context.
    pub device: DeviceId,
}

impl Location {
    /// A location from its parts.
    pub fn new(context: ContextId, device: DeviceId) -> Self {
        Location { context, device }
    }
}

impl Handle for Location {
    const KIND: HandleKind = HandleKind::Context;
    fn adapter_id(&self) -> u32 {
        self.context.host
    }
}

impl fmt::Display for Location {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "({}, {})", self.context, self.device)
    }
}
