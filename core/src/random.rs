//! Random inputs for property tests (the `proptest` feature): each workload says, in its own file, how to draw an
//! input of a random small shape holding random special values ([`RandomInputs`]), so that the conformance suite
//! draws them for every workload of the list without a line of its own.
//!
//! Values come from the specification's range with NaN, ±infinity and signed zeros sprinkled in where the
//! specification defines what they give; shapes stay small (0 and 1 often) so that every workload runs on lavapipe in
//! seconds.

use proptest::prelude::*;

use crate::Workload;

/// How to draw a random input of a workload.
pub trait RandomInputs: Workload {
    /// Inputs of random small shapes holding random special values.
    fn random() -> BoxedStrategy<Self::Input>;
}

/// `len` values uniform in `[low, high)`, about one in eight replaced by NaN, +inf, −inf or a signed zero.
pub fn values(len: usize, low: f32, high: f32) -> impl Strategy<Value = Vec<f32>> {
    let special = prop_oneof![Just(f32::NAN), Just(f32::INFINITY), Just(f32::NEG_INFINITY), Just(0.0), Just(-0.0)];
    proptest::collection::vec(prop_oneof![7 => low..high, 1 => special], len)
}

/// A length from 0 to a few thousand, 0 and 1 often.
pub fn length() -> impl Strategy<Value = usize> {
    prop_oneof![Just(0usize), Just(1usize), 2usize..64, 64usize..3000]
}

/// A side of a 2D shape, 0 and 1 often.
pub fn side(most: usize) -> impl Strategy<Value = usize> {
    prop_oneof![Just(0usize), Just(1usize), 2usize..=most]
}

/// What a workload's [`RandomInputs`] needs: proptest's prelude and the helpers above.
pub mod prelude {
    pub use super::{length, side, values};
    pub use proptest::prelude::*;
}
