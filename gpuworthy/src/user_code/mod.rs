//! Users' own computations: expressions in the language ([`expression`]) and raw kernels written for each backend
//! ([`raw`]), measured, checked and chosen for like the built-in workloads. It is the top of the facade: it stands on
//! [`crate::choose`] and everything below it.

pub mod expression;
pub mod raw;
