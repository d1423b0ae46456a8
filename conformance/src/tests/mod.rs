//! The tests, one file per group. [`all`] lists every case in a stable order.

/// Declares the `cases()` list of a group file.
macro_rules! cases {
    ($group:literal, positive: [$($p:ident),* $(,)?], negative: [$($n:ident),* $(,)?] $(,)?) => {
        /// The tests of this group.
        pub fn cases() -> Vec<$crate::TestCase> {
            vec![
                $($crate::TestCase { group: $group, name: stringify!($p), negative: false, body: $p },)*
                $($crate::TestCase { group: $group, name: stringify!($n), negative: true, body: $n },)*
            ]
        }
    };
}

pub mod buffer;
pub mod context;
pub mod copy;
pub mod device;
pub mod event;
pub mod fill;
pub mod kernel;
pub mod location;
pub mod map;
pub mod negative_foreign;
pub mod negative_handles;
pub mod negative_memory;
pub mod negative_objects;
pub mod negative_usm;
pub mod platform;
pub mod program;
pub mod queue;
pub mod rect;
pub mod usm;

/// Every test case of the suite.
pub fn all() -> Vec<crate::TestCase> {
    [
        platform::cases(),
        device::cases(),
        context::cases(),
        buffer::cases(),
        usm::cases(),
        queue::cases(),
        event::cases(),
        copy::cases(),
        rect::cases(),
        fill::cases(),
        map::cases(),
        program::cases(),
        kernel::cases(),
        negative_memory::cases(),
        negative_usm::cases(),
        negative_handles::cases(),
        negative_foreign::cases(),
        negative_objects::cases(),
        location::cases(),
    ]
    .concat()
}

#[cfg(test)]
mod unit {
    #[test]
    fn ids_are_unique_and_counts_meet_the_bar() {
        let all = super::all();
        let mut ids: Vec<String> = all.iter().map(|t| t.id()).collect();
        ids.sort();
        let n = ids.len();
        ids.dedup();
        assert_eq!(ids.len(), n, "duplicate test ids");
        assert!(n >= 80, "{n} tests");
        assert!(all.iter().filter(|t| t.negative).count() >= 40);
    }
}
