//! Approved baselines: the normalised behaviour of a run and its files on disk.

mod behaviour;
mod set;
mod store;

pub mod usage;
pub use behaviour::*;
pub use set::*;
pub use store::*;

#[cfg(test)]
mod properties_tests;
