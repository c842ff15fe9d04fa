use std::collections::HashSet;

use camino::Utf8PathBuf;

use super::*;
use crate::{EventBody, Header, PromptHasher, RunStatus, Str, TraceWriter};

fn sealed(scenario: &str, case: &str, answer: &str, raw: bool) -> SealedTrace {
    let mut header = Header::new(scenario.to_owned(), case.to_owned());
    header.trial = None;
    let mut w = TraceWriter::with_prompts(header, PromptHasher::unkeyed(), raw);
    w.user_message(None, None, "the prompt text");
    w.push(
        None,
        EventBody::FinalAnswer {
            text: Str::from(answer.to_owned()),
        },
    );
    w.push(
        None,
        EventBody::RunEnd {
            status: RunStatus::Completed,
            error: None,
        },
    );
    w.finish().unwrap()
}

/// A key-shaped string made at run time (no key-shaped literal in the sources).
fn fake_key() -> String {
    ["sk-", "proj-", &"A1b2C3d4".repeat(4)].concat()
}

struct Dir {
    _tmp: tempfile::TempDir,
    confined: Confined,
}

fn dir() -> Dir {
    let tmp = tempfile::tempdir().unwrap();
    let root = Utf8PathBuf::from_path_buf(tmp.path().to_owned()).unwrap();
    Dir {
        _tmp: tmp,
        confined: Confined::new(root),
    }
}

fn how<'a>(d: &'a Dir, existing: Existing, waived: &'a HashSet<String>) -> Placement<'a> {
    Placement {
        dir: &d.confined,
        raw_prompts: false,
        existing,
        durable: false,
        limits: Limits::default(),
        waived,
    }
}

const RUN: RunName<'static> = RunName {
    scenario: "Agent.Search",
    case: "Default",
    trial: None,
};

#[test]
fn a_run_is_named_by_lowercased_segments_and_a_trial_is_a_file_of_its_case() {
    assert_eq!(RUN.path(), "agent.search/default.trace.ndjson.zst");
    let trial = RunName {
        trial: Some("T-2"),
        ..RUN
    };
    assert_eq!(trial.path(), "agent.search/default/t-2.trace.ndjson.zst");
    let hostile = RunName {
        scenario: "../up",
        case: ".hidden",
        trial: None,
    };
    assert_eq!(hostile.path(), "%2E.%2Fup/%2Ehidden.trace.ndjson.zst");
}

#[test]
fn what_would_hold_a_secret_is_refused_whole_and_a_waiver_lets_it_through() {
    let d = dir();
    let none = HashSet::new();
    let trace = sealed("s", "c", &format!("the key is {}", fake_key()), false);
    let err = trace
        .place(RUN, &how(&d, Existing::Refuse, &none))
        .unwrap_err();
    let PlaceError::Secret {
        kind,
        fingerprint,
        part,
        line,
    } = &err
    else {
        panic!("{err}")
    };
    assert_eq!(
        (kind.as_str(), *part, *line),
        ("openai-key", "trace", Some(3))
    );
    assert!(!err.to_string().contains(&fake_key()), "{err}");
    assert!(!d.confined.root().join("agent.search").exists());
    let waived = HashSet::from([fingerprint.clone()]);
    let placed = trace
        .place(RUN, &how(&d, Existing::Refuse, &waived))
        .unwrap();
    assert!(matches!(placed, Placed::Written { .. }), "{placed:?}");
}

#[test]
fn the_sidecar_is_written_and_scanned_only_under_the_opt_in() {
    let none = HashSet::new();
    let trace = sealed("s", "c", "fine", true);
    let side = |d: &Dir| {
        d.confined
            .root()
            .join("agent.search/default.prompts.ndjson")
    };
    let d = dir();
    trace.place(RUN, &how(&d, Existing::Refuse, &none)).unwrap();
    assert!(!side(&d).exists());
    let d = dir();
    let opted = Placement {
        raw_prompts: true,
        ..how(&d, Existing::Refuse, &none)
    };
    trace.place(RUN, &opted).unwrap();
    let text = std::fs::read_to_string(side(&d)).unwrap();
    assert!(text.contains("the prompt text"), "{text}");
    // The sidecar holds raw text, so its secrets count too, only when it is written.
    let mut leaky = sealed("s", "c", "fine", true);
    leaky.sidecar = Some(format!("{{\"text\":\"{}\"}}\n", fake_key()).into_bytes());
    let d = dir();
    let opted = Placement {
        raw_prompts: true,
        ..how(&d, Existing::Refuse, &none)
    };
    let err = leaky.place(RUN, &opted).unwrap_err();
    assert!(
        matches!(
            err,
            PlaceError::Secret {
                part: "sidecar",
                ..
            }
        ),
        "{err}"
    );
    leaky.place(RUN, &how(&d, Existing::Refuse, &none)).unwrap();
}

#[test]
fn what_stands_there_is_kept_replaced_or_refused_as_the_writer_says() {
    let none = HashSet::new();
    let (first, second) = (
        sealed("Agent.Search", "Default", "one", false),
        sealed("Agent.Search", "Default", "two", false),
    );
    let d = dir();
    let path = d.confined.root().join(RUN.path());
    first.place(RUN, &how(&d, Existing::Refuse, &none)).unwrap();
    // A recorder never replaces a file.
    let err = second
        .place(RUN, &how(&d, Existing::Refuse, &none))
        .unwrap_err();
    assert!(matches!(err, PlaceError::Exists { .. }), "{err}");
    // Ingest leaves the same trace as it is, keeps a different one without force.
    let same = first
        .place(RUN, &how(&d, Existing::KeepSame { force: false }, &none))
        .unwrap();
    assert_eq!(same, Placed::Unchanged { path: path.clone() });
    let err = second
        .place(RUN, &how(&d, Existing::KeepSame { force: false }, &none))
        .unwrap_err();
    assert!(
        err.to_string().contains(&format!(
            "a different trace ({}, the new one is {})",
            first.content_hash, second.content_hash
        )),
        "{err}"
    );
    second
        .place(RUN, &how(&d, Existing::KeepSame { force: true }, &none))
        .unwrap();
    let stored = TraceFile::open(&path, Limits::default()).unwrap();
    assert_eq!(
        stored.verify_seal(true).unwrap().content_hash,
        second.content_hash
    );
    // A recording of this very run is replaced; another run's file (its ids spelt in other
    // letter case, sharing the name) is not.
    first
        .place(RUN, &how(&d, Existing::SameRun, &none))
        .unwrap();
    let other = RunName {
        scenario: "agent.search",
        ..RUN
    };
    let err = sealed("agent.search", "Default", "x", false)
        .place(other, &how(&d, Existing::SameRun, &none))
        .unwrap_err();
    assert!(
        err.to_string()
            .contains("holds the recording of scenario `Agent.Search` case `Default`"),
        "{err}"
    );
}

#[cfg(unix)]
#[test]
fn nothing_is_written_through_a_symlink_under_the_directory() {
    let none = HashSet::new();
    let d = dir();
    let outside = tempfile::tempdir().unwrap();
    std::os::unix::fs::symlink(outside.path(), d.confined.root().join("agent.search")).unwrap();
    let err = sealed("s", "c", "fine", false)
        .place(RUN, &how(&d, Existing::Refuse, &none))
        .unwrap_err();
    assert!(matches!(err, PlaceError::Io { .. }), "{err}");
    assert_eq!(std::fs::read_dir(outside.path()).unwrap().count(), 0);
}
