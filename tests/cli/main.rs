//! Integration tests: the real `tracereplay` binary in temporary directories.

mod adoption;
mod bad_input;
mod baselines;
mod check;
mod contained;
mod docs;
mod everyday;
mod explain;
mod faults;
mod gates;
mod guard;
mod html;
mod ingest;
mod ingest_otel;
mod privacy;
mod project;
mod real_corpora;
mod replay;
mod replay_python;
mod reports;
mod scale;
mod scores;
mod seal;
mod trust;
mod util;
mod workflows;
