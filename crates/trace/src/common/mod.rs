//! Values several layers share, depending on nothing else of this crate: what kind of problem
//! kept a row from being judged ([`RowErrorKind`]), money and counts as text, escaping of
//! untrusted text, time stamps, ids as path segments, and an error's chain as one line.

pub mod money;
mod row_error;
pub mod segment;
pub mod stamp;
pub mod text;

pub use row_error::RowErrorKind;

/// `e` and its sources, `: `-separated.
pub fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}
