//! Placeholder; see ARCHITECTURE.md.
