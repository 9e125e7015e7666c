//! The OS model's error type: what every failing system call, fault or allocation returns.
//!
//! Contract: the message is fit to show a user (it names the address, the setting to change or,
//! for an inconsistency, "simulator bug"); nothing here names any other file of the model, so
//! every layer (the allocator included) can return it.

/// An OS-model error (out of memory, access outside any VMA, bad system call), fit to show a user.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct OsError(pub String);

impl std::fmt::Display for OsError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}
impl std::error::Error for OsError {}
