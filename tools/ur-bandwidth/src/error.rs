//! The tool's typed errors: fatal ones end the run; those of one cell are
//! reported in that cell and the run goes on.

use std::path::PathBuf;

/// Everything that can go wrong in `ur-bandwidth`.
#[derive(Debug, thiserror::Error)]
pub enum BwError {
    /// A size on the command line that is not one.
    #[error("`{text}` is not a size: {why}")]
    Size {
        /// What was given.
        text: String,
        /// Why it was refused.
        why: String,
    },
    /// A `--route` value that names no route.
    #[error("`{0}` is not a route: use `chosen`, `all`, or letters of the route legend (I, C, S, Z, Zd, Zb, W, R, D, L, H) separated by commas")]
    Route(String),
    /// A device selector that does not parse, or names no backend.
    #[error("device selector: {0}")]
    Selector(String),
    /// The memory manager refused or failed.
    #[error(transparent)]
    Manager(#[from] ur_memory_manager::MmError),
    /// The runtime below refused or failed.
    #[error(transparent)]
    Runtime(#[from] ur_api::Error),
    /// The measurement panicked (an adapter bug); the message it carried.
    #[error("panicked: {0}")]
    Panic(String),
    /// The manager took different routes in one cell's repetitions.
    #[error("the route changed between repetitions: {first} then {then}")]
    RouteChanged {
        /// The first repetition's route.
        first: String,
        /// A later one's.
        then: String,
    },
    /// Writing an output file.
    #[error("writing {}: {source}", path.display())]
    Write {
        /// The file.
        path: PathBuf,
        /// The cause.
        #[source]
        source: std::io::Error,
    },
    /// Serialising the JSON report.
    #[error("JSON: {0}")]
    Json(#[from] serde_json::Error),
    /// Drawing the heatmap.
    #[error("drawing {}: {why}", path.display())]
    Svg {
        /// The file.
        path: PathBuf,
        /// What plotters said.
        why: String,
    },
}
