//! WIP
pub mod error;
pub mod interval;
pub mod plan;
pub mod route;
pub use error::{MmError, Result};
pub use interval::IntervalSet;
pub use plan::{Access, Plan, Route, Step};
