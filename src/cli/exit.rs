//! Exit codes, in one place.

/// Everything held.
pub(crate) const OK: i32 = 0;
/// Something judged did not hold (a failure that counts, an error verdict, a bad seal…).
pub(crate) const FAILURE: i32 = 1;
/// The command could not do its job (bad arguments, missing paths, nothing to judge).
pub(crate) const ERROR: i32 = 2;
