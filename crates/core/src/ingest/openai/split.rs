//! The input split into pieces, each a part's refusals and runs, and the runs built: each as
//! soon as its name is known, the rest once every run of the input is counted (a run named by
//! its place, `run-3`, needs how many there are).

use rayon::prelude::*;

use super::naming::{self, Position};
use super::{IngestOptions, IngestOutcome, RawRun, RunIds, build, document, runs_of};

/// `bytes` read whole (one document, else JSON Lines) and split into runs, none built yet.
pub(super) fn read_whole(bytes: &[u8]) -> Piece {
    let mut piece = Piece::default();
    let mut raw = Vec::new();
    let none = RunIds::default();
    document::read(
        bytes,
        &mut piece.rejected,
        &mut |value, position, outcome| runs_of(value, position, &none, &mut raw, outcome),
    );
    piece.runs = raw.into_iter().map(|r| Run::Unnamed(Box::new(r))).collect();
    piece
}

/// What one part of the input gave: what it refused as it was split into runs, then its runs.
#[derive(Default)]
pub(super) struct Piece {
    pub(super) rejected: IngestOutcome,
    pub(super) runs: Vec<Run>,
}

/// A run of the input: built already (its name did not depend on where it sits in the input),
/// or still to be named and built once every run is counted.
pub(super) enum Run {
    Built(IngestOutcome),
    Unnamed(Box<RawRun>),
}

impl Run {
    /// `run`, built now when its name does not depend on its place in the input: its values
    /// are dropped by the worker that read them, and no run waits for every other to be read.
    pub(super) fn of(run: RawRun, opts: &IngestOptions) -> Run {
        match naming::name_anywhere(&run.ids, opts) {
            Some(named) => {
                let mut outcome = IngestOutcome::default();
                build(&run, named, opts, &mut outcome);
                Run::Built(outcome)
            }
            None => Run::Unnamed(Box::new(run)),
        }
    }
}

/// The outcome of every piece, in the input's order: first what was refused as the input was
/// split into runs, then each run's, the runs still unnamed named and built in parallel.
pub(super) fn finish(pieces: Vec<Piece>, opts: &IngestOptions) -> IngestOutcome {
    let mut outcome = IngestOutcome::default();
    let mut runs = Vec::new();
    for piece in pieces {
        outcome.merge(piece.rejected);
        runs.extend(piece.runs);
    }
    let count = runs.len();
    let built: Vec<IngestOutcome> = (runs.into_par_iter().enumerate())
        .map(|(i, run)| match run {
            Run::Built(outcome) => outcome,
            Run::Unnamed(run) => {
                let mut outcome = IngestOutcome::default();
                let at = Position {
                    n: i + 1,
                    of: count,
                };
                build(&run, naming::name(&run.ids, at, opts), opts, &mut outcome);
                outcome
            }
        })
        .collect();
    for b in built {
        outcome.merge(b);
    }
    outcome
}
