//! The event order rules, in one place for the reader and the writer: `seq` increases, a trace
//! has at most one `final_answer` and one `run_end`, and a `message_edit` or `message_delete`
//! names a message an earlier `message` sent. The reader refuses a trace that breaks one (naming
//! its line); [`super::TraceWriter`] refuses to seal one.

use foldhash::HashSet;

use super::model::EventBody;

/// A broken event order rule.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OrderError {
    /// `seq` at or below the previous event's.
    #[error("`seq` {seq} does not increase (the previous event has seq {prev})")]
    Seq {
        /// This event's seq.
        seq: u64,
        /// The previous event's.
        prev: u64,
    },
    /// A second `final_answer`.
    #[error("a second `final_answer` (a trace has at most one)")]
    SecondFinalAnswer,
    /// A second `run_end`.
    #[error("a second `run_end` (a trace has at most one)")]
    SecondRunEnd,
    /// An edit or deletion of a message no earlier `message` sent.
    #[error("`{kind}` names a message id that no earlier `message` sent")]
    UnknownMessage {
        /// `message_edit` or `message_delete`.
        kind: &'static str,
    },
}

/// An event a [`super::TraceWriter`] was given that broke an order rule: the trace is not
/// sealed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("the event at seq {seq} breaks the trace's event order: {rule}")]
pub struct BrokenOrder {
    /// The event's seq.
    pub seq: u64,
    /// The rule it broke.
    pub rule: OrderError,
}

/// What the rules need to know of the events so far.
#[derive(Debug, Default, Clone)]
pub(crate) struct EventOrder {
    last_seq: Option<u64>,
    final_answer: bool,
    run_end: bool,
    message_ids: HashSet<String>,
}

impl EventOrder {
    /// Takes the next event's `seq`.
    pub(crate) fn seq(&mut self, seq: u64) -> Result<(), OrderError> {
        if let Some(prev) = self.last_seq.filter(|prev| seq <= *prev) {
            return Err(OrderError::Seq { seq, prev });
        }
        self.last_seq = Some(seq);
        Ok(())
    }

    /// The next `seq` that increases.
    pub(crate) fn next_seq(&self) -> u64 {
        self.last_seq.map_or(1, |s| s + 1)
    }

    /// Takes the next event's body.
    pub(crate) fn admit(&mut self, body: &EventBody<'_>) -> Result<(), OrderError> {
        match body {
            EventBody::Message { id, .. } => {
                self.message_ids.insert(id.to_string());
            }
            EventBody::MessageEdit { id, .. } | EventBody::MessageDelete { id }
                if !self.message_ids.contains(id.as_str()) =>
            {
                let kind = match body {
                    EventBody::MessageEdit { .. } => "message_edit",
                    _ => "message_delete",
                };
                return Err(OrderError::UnknownMessage { kind });
            }
            EventBody::FinalAnswer { .. } if std::mem::replace(&mut self.final_answer, true) => {
                return Err(OrderError::SecondFinalAnswer);
            }
            EventBody::RunEnd { .. } if std::mem::replace(&mut self.run_end, true) => {
                return Err(OrderError::SecondRunEnd);
            }
            _ => {}
        }
        Ok(())
    }
}
