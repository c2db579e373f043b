//! [`WorkloadName`]: how rows, sweeps, calibrations and evaluations name the workload they measured.
//!
//! A built-in workload's name is a constant (`W::NAME`), but an expression's instance is named at run time from its
//! program, and a user's workload joins the run-time list with a name of its own. A shared, reference-counted name
//! serves both without leaking a string per distinct expression for the life of the process, and cloning a row
//! costs a counter, not a copy. It compares with plain strings, so code that asks "is this `square`?" reads as
//! before, and it is written as its text in JSON.

use std::borrow::Borrow;
use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// The name of a measured workload (`square`, `matmul`, or an expression's instance such as `expr: y = x * x`).
///
/// ```
/// use gpuworthy::measure::workload_name::WorkloadName;
///
/// let name = WorkloadName::from("square");
/// assert_eq!(name, "square");
/// assert_eq!(name.as_str(), "square");
/// assert_eq!(format!("[{name:<8}]"), "[square  ]");
/// assert_eq!(serde_json::to_string(&name).unwrap(), "\"square\"");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WorkloadName(Arc<str>);

impl WorkloadName {
    /// The name's text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl Default for WorkloadName {
    /// The empty name, of a record not yet filled in.
    fn default() -> Self {
        WorkloadName::from("")
    }
}

impl From<&str> for WorkloadName {
    fn from(name: &str) -> Self {
        WorkloadName(Arc::from(name))
    }
}

impl From<String> for WorkloadName {
    fn from(name: String) -> Self {
        WorkloadName(Arc::from(name))
    }
}

impl Deref for WorkloadName {
    type Target = str;
    fn deref(&self) -> &str {
        &self.0
    }
}

impl Borrow<str> for WorkloadName {
    fn borrow(&self) -> &str {
        &self.0
    }
}

impl AsRef<str> for WorkloadName {
    fn as_ref(&self) -> &str {
        &self.0
    }
}

impl PartialEq<str> for WorkloadName {
    fn eq(&self, other: &str) -> bool {
        &*self.0 == other
    }
}

impl PartialEq<&str> for WorkloadName {
    fn eq(&self, other: &&str) -> bool {
        &*self.0 == *other
    }
}

impl PartialEq<String> for WorkloadName {
    fn eq(&self, other: &String) -> bool {
        *self.0 == **other
    }
}

impl PartialEq<WorkloadName> for &str {
    fn eq(&self, other: &WorkloadName) -> bool {
        *self == &*other.0
    }
}

impl PartialEq<WorkloadName> for String {
    fn eq(&self, other: &WorkloadName) -> bool {
        **self == *other.0
    }
}

impl fmt::Display for WorkloadName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.pad(&self.0)
    }
}

impl Serialize for WorkloadName {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for WorkloadName {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<WorkloadName, D::Error> {
        String::deserialize(deserializer).map(WorkloadName::from)
    }
}
