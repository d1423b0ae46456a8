//! Element types of the DRI table, and the Rust types that view them.

use std::fmt;

use num_complex::Complex;

/// The element type of global data (the DRI table). Split complex types
/// store real and imaginary parts in two planes of the local memory.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum ElementType {
    /// `f32`.
    F32,
    /// `f64`.
    F64,
    /// `i16`.
    I16,
    /// `u16`.
    U16,
    /// `i32`.
    I32,
    /// `i64`.
    I64,
    /// `u64`.
    U64,
    /// Complex `f32`, real and imaginary part side by side.
    ComplexF32,
    /// Complex `f64`, real and imaginary part side by side.
    ComplexF64,
    /// Complex `f32` in two planes (real plane, then imaginary plane).
    SplitComplexF32,
    /// Complex `f64` in two planes (real plane, then imaginary plane).
    SplitComplexF64,
}

impl ElementType {
    /// Every element type.
    pub const ALL: [ElementType; 11] = [
        Self::F32,
        Self::F64,
        Self::I16,
        Self::U16,
        Self::I32,
        Self::I64,
        Self::U64,
        Self::ComplexF32,
        Self::ComplexF64,
        Self::SplitComplexF32,
        Self::SplitComplexF64,
    ];

    /// Bytes of one stored unit: a whole element, or one part of a split
    /// complex element.
    pub fn unit_bytes(self) -> usize {
        match self {
            Self::I16 | Self::U16 => 2,
            Self::F32 | Self::I32 | Self::SplitComplexF32 => 4,
            Self::F64 | Self::I64 | Self::U64 | Self::ComplexF32 | Self::SplitComplexF64 => 8,
            Self::ComplexF64 => 16,
        }
    }

    /// Planes of local memory: 2 for split complex, 1 otherwise.
    pub fn planes(self) -> usize {
        if self.is_split() {
            2
        } else {
            1
        }
    }

    /// Whether real and imaginary parts live in separate planes.
    pub fn is_split(self) -> bool {
        matches!(self, Self::SplitComplexF32 | Self::SplitComplexF64)
    }

    /// Bytes of one element (both parts of a split complex element).
    pub fn element_bytes(self) -> usize {
        self.unit_bytes() * self.planes()
    }
}

impl fmt::Display for ElementType {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let s = match self {
            Self::F32 => "f32",
            Self::F64 => "f64",
            Self::I16 => "i16",
            Self::U16 => "u16",
            Self::I32 => "i32",
            Self::I64 => "i64",
            Self::U64 => "u64",
            Self::ComplexF32 => "complex f32",
            Self::ComplexF64 => "complex f64",
            Self::SplitComplexF32 => "split complex f32",
            Self::SplitComplexF64 => "split complex f64",
        };
        f.write_str(s)
    }
}

/// A Rust type that a view can show: one stored unit of some element types.
pub trait Element: bytemuck::Pod {
    /// Its name in errors.
    const NAME: &'static str;
    /// Whether it views data of this element type (a plane's part, for
    /// split complex).
    fn views(ty: ElementType) -> bool;
}

macro_rules! element {
    ($t:ty, $name:literal, $($ty:ident)|+) => {
        impl Element for $t {
            const NAME: &'static str = $name;
            fn views(ty: ElementType) -> bool {
                matches!(ty, $(ElementType::$ty)|+)
            }
        }
    };
}

element!(f32, "f32", F32 | SplitComplexF32);
element!(f64, "f64", F64 | SplitComplexF64);
element!(i16, "i16", I16);
element!(u16, "u16", U16);
element!(i32, "i32", I32);
element!(i64, "i64", I64);
element!(u64, "u64", U64);
element!(Complex<f32>, "Complex<f32>", ComplexF32);
element!(Complex<f64>, "Complex<f64>", ComplexF64);
