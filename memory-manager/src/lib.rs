//! WIP
mod error;
mod evict;
mod exec;
mod interval;
mod manager;
mod plan;
mod residency;
mod route;
mod staging;

pub use error::{MmError, Result};
pub use interval::IntervalSet;
pub use manager::{Acquired, Config, LogicalBuffer, MemoryManager, Place, Stats};
pub use plan::{Access, Plan, Route, Step};
pub use route::LinkCost;
