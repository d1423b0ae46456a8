//! Runnable examples of the Unified Runtime and its memory manager; see
//! `examples/pipeline.rs` (`cargo run -p ur-examples --example pipeline`).
