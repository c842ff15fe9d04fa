//! Turns: the span of events from one `user_message` up to (not including) the next. Events
//! before the first `user_message` belong to turn 1; a trace without `user_message` has no turns.

use std::ops::Range;

use crate::trace::{Event, EventBody, Trace};

/// The index ranges (into `events`) of each turn, in order; empty when there is no
/// `user_message`.
pub(crate) fn turn_ranges(events: &[Event<'_>]) -> Vec<Range<usize>> {
    let starts: Vec<usize> = (events.iter().enumerate())
        .filter(|(_, e)| matches!(e.body, EventBody::UserMessage { .. }))
        .map(|(i, _)| i)
        .collect();
    let mut out = Vec::with_capacity(starts.len());
    for (k, &s) in starts.iter().enumerate() {
        let begin = if k == 0 { 0 } else { s };
        let end = starts.get(k + 1).copied().unwrap_or(events.len());
        out.push(begin..end);
    }
    out
}

/// The 0-based index of turn `n` (1-based; negative counts from the end) among `count`.
pub(crate) fn resolve(n: i64, count: usize) -> Option<usize> {
    let count = i64::try_from(count).ok()?;
    let i = if n > 0 { n - 1 } else { count + n };
    (0..count).contains(&i).then_some(i as usize)
}

/// The trace restricted to one turn's events, plus the run's `run_end` when it lies outside.
pub(crate) fn turn_trace<'a>(trace: &Trace<'a>, range: Range<usize>) -> Trace<'a> {
    let mut events: Vec<Event<'a>> = trace.events[range.clone()].to_vec();
    if !events
        .iter()
        .any(|e| matches!(e.body, EventBody::RunEnd { .. }))
    {
        if let Some((end, _)) = trace.run_end() {
            events.push(end.clone());
        }
    }
    Trace {
        header: trace.header.clone(),
        events,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn resolves_from_both_ends() {
        assert_eq!(resolve(1, 3), Some(0));
        assert_eq!(resolve(3, 3), Some(2));
        assert_eq!(resolve(4, 3), None);
        assert_eq!(resolve(-1, 3), Some(2));
        assert_eq!(resolve(-3, 3), Some(0));
        assert_eq!(resolve(-4, 3), None);
        assert_eq!(resolve(0, 3), None);
        assert_eq!(resolve(1, 0), None);
    }
}
