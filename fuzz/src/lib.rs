//! What the fuzz targets share.

/// Runs `f` once per process (the fuzz targets keep a runtime alive across
/// inputs: building one per input would dominate the run).
#[macro_export]
macro_rules! once {
    ($ty:ty, $init:expr) => {{
        static CELL: std::sync::OnceLock<$ty> = std::sync::OnceLock::new();
        CELL.get_or_init(|| $init)
    }};
}
