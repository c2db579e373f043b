//! Names of what was measured, shared rather than copied: [`WorkloadName`] (the workload), [`VariantName`] (its
//! variant) and [`SizeLabel`] (its size, as the workload displays it), as rows, sweeps, calibrations and evaluations
//! hold them.
//!
//! A built-in workload's name and its variants' are constants (`W::NAME`, the variant tables), but an expression's
//! instance is named at run time from its program, a user's workload joins the run-time list with a name of its own,
//! and a size's label is made from its parameters. A shared, reference-counted name serves all of them without
//! leaking a string per distinct expression for the life of the process, and cloning a row costs a counter, not a
//! copy. Three types keep a variant from being passed where a size or a workload is meant. Each compares with plain
//! strings, so code that asks "is this `square`?" reads as before, and each is written as its text in JSON.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Declares a shared name type: an `Arc<str>` that derefs to `str`, compares with strings, displays with padding and
/// serialises as its text.
macro_rules! shared_name {
    ($(#[$doc:meta])* $name:ident) => {
        $(#[$doc])*
        #[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
        pub struct $name(Arc<str>);

        impl $name {
            /// The name's text.
            pub fn as_str(&self) -> &str {
                &self.0
            }
        }

        impl Default for $name {
            /// The empty name, of a record not yet filled in.
            fn default() -> Self {
                $name::from("")
            }
        }

        impl From<&str> for $name {
            fn from(name: &str) -> Self {
                $name(Arc::from(name))
            }
        }

        impl From<String> for $name {
            fn from(name: String) -> Self {
                $name(Arc::from(name))
            }
        }

        impl Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                &*self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                &*self.0 == *other
            }
        }

        impl PartialEq<String> for $name {
            fn eq(&self, other: &String) -> bool {
                *self.0 == **other
            }
        }

        impl PartialEq<$name> for &str {
            fn eq(&self, other: &$name) -> bool {
                *self == &*other.0
            }
        }

        impl PartialEq<$name> for String {
            fn eq(&self, other: &$name) -> bool {
                **self == *other.0
            }
        }

        impl fmt::Display for $name {
            fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.pad(&self.0)
            }
        }

        impl Serialize for $name {
            fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
                serializer.serialize_str(&self.0)
            }
        }

        impl<'de> Deserialize<'de> for $name {
            fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<$name, D::Error> {
                String::deserialize(deserializer).map($name::from)
            }
        }
    };
}

shared_name! {
    /// The name of a measured workload (`square`, `matmul`, or an expression's instance such as `expr: y = x * x`).
    ///
    /// ```
    /// use gpuworthy::measure::names::WorkloadName;
    ///
    /// let name = WorkloadName::from("square");
    /// assert_eq!(name, "square");
    /// assert_eq!(name.as_str(), "square");
    /// assert_eq!(format!("[{name:<8}]"), "[square  ]");
    /// assert_eq!(serde_json::to_string(&name).unwrap(), "\"square\"");
    /// ```
    WorkloadName
}

shared_name! {
    /// The name of a measured variant (`simd`, `tiled`, `generated`).
    ///
    /// ```
    /// use gpuworthy::measure::names::VariantName;
    ///
    /// let variant = VariantName::from("simd");
    /// assert_eq!(variant, "simd");
    /// assert_eq!(serde_json::to_string(&variant).unwrap(), "\"simd\"");
    /// ```
    VariantName
}

shared_name! {
    /// A measured size as its workload displays it (`16777216`, `1024x1024x1024`).
    ///
    /// ```
    /// use gpuworthy::measure::names::SizeLabel;
    ///
    /// let size = SizeLabel::from(format!("{}x{}", 2048, 2048));
    /// assert_eq!(size, "2048x2048");
    /// ```
    SizeLabel
}
