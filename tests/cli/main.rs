//! Integration tests: the real `tracereplay` binary in temporary directories.

mod bad_input;
mod check;
mod seal;
mod util;
