//! Approved baselines: the normalised behaviour of a run and its files on disk.

mod behaviour;
mod store;

pub use behaviour::*;
pub use store::*;

#[cfg(test)]
mod properties_tests;
