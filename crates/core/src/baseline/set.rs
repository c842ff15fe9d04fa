//! Baselines of trial sets: a case with two or more trials has one file at the usual path
//! holding every approved trial's behaviour (`format: "tracereplay.baseline-set"`). Counts are
//! derived from the behaviours when compared, never stored and trusted.

use camino::Utf8Path;
use serde::{Deserialize, Serialize};

use super::behaviour::Behaviour;
use super::store::{BASELINE_FORMAT, BaselineError, BaselineFile, MAX_BASELINE_BYTES};
use super::text::pretty_text;
use crate::fsutil::read_regular;
use crate::trace::TrialId;

/// `format` of a trial-set baseline.
pub const SET_FORMAT: &str = "tracereplay.baseline-set";
/// The trial-set format version this tool reads and writes.
pub const SET_VERSION: u64 = 1;

/// One approved trial.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct SetTrial {
    /// The trial id (an integer id as a JSON number).
    #[serde(with = "trial_json")]
    pub trial: TrialId,
    /// Content hash of the approved trace.
    pub content_hash: String,
    /// What the trial did.
    pub behaviour: Behaviour,
}

/// A trial-set baseline file.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct BaselineSet {
    /// Always [`SET_FORMAT`].
    pub format: String,
    /// Always [`SET_VERSION`].
    pub version: u64,
    /// Scenario id.
    pub scenario: String,
    /// Case.
    pub case: String,
    /// The tool version that wrote it (information only, never compared).
    pub tool_version: String,
    /// The approved trials, in trial order.
    pub trials: Vec<SetTrial>,
}

/// An approved baseline of either kind.
#[derive(Debug, Clone, PartialEq)]
pub enum Approved {
    /// One trace's behaviour.
    Single(Box<BaselineFile>),
    /// A set of trials.
    Set(BaselineSet),
}

impl BaselineSet {
    /// A set baseline of `trials`, put in trial order.
    pub fn new(scenario: &str, case: &str, mut trials: Vec<SetTrial>) -> BaselineSet {
        trials.sort_by(|a, b| crate::trace::trial::order(a.trial.as_str(), b.trial.as_str()));
        BaselineSet {
            format: SET_FORMAT.to_owned(),
            version: SET_VERSION,
            scenario: scenario.to_owned(),
            case: case.to_owned(),
            tool_version: env!("CARGO_PKG_VERSION").to_owned(),
            trials,
        }
    }

    /// The file's text: sorted keys, two-space indent, as single baselines are written.
    pub fn to_text(&self) -> String {
        let value = serde_json::to_value(self).expect("a baseline set serialises");
        pretty_text(&value)
    }
}

impl Approved {
    /// Reads an approved (or pending) baseline of either kind.
    pub fn read(path: &Utf8Path) -> Result<Approved, BaselineError> {
        let bytes = read_regular(path, MAX_BASELINE_BYTES, "baseline").map_err(|source| {
            BaselineError::Io {
                path: path.to_owned(),
                source,
            }
        })?;
        Approved::parse(path, &bytes)
    }

    /// [`Approved::read`], refusing a symlink in the file's place (an approved baseline beside a
    /// listed pending file is never read through one).
    pub fn read_unlinked(path: &Utf8Path) -> Result<Approved, BaselineError> {
        if std::fs::symlink_metadata(path).is_ok_and(|m| m.file_type().is_symlink()) {
            return Err(BaselineError::Io {
                path: path.to_owned(),
                source: std::io::Error::new(
                    std::io::ErrorKind::InvalidInput,
                    format!("`{path}` is a symlink; approved baselines are never read through one"),
                ),
            });
        }
        Approved::read(path)
    }

    /// Parses baseline bytes of either kind, read from `path`.
    pub fn parse(path: &Utf8Path, bytes: &[u8]) -> Result<Approved, BaselineError> {
        let invalid = |detail: String| BaselineError::Invalid {
            path: path.to_owned(),
            detail,
        };
        // The format decides; a file that is not JSON is left to the single reader's message.
        let header = super::store::Header::of(bytes);
        let format = header.as_ref().and_then(|h| h.format.as_deref());
        if format != Some(SET_FORMAT) {
            return BaselineFile::parse_with(path, bytes, header)
                .map(|b| Approved::Single(Box::new(b)));
        }
        let set: BaselineSet = serde_json::from_slice(bytes).map_err(|e| invalid(e.to_string()))?;
        if set.version != SET_VERSION {
            return Err(invalid(format!(
                "unknown baseline-set version {} (this tracereplay reads version {SET_VERSION})",
                set.version
            )));
        }
        if set.trials.is_empty() {
            return Err(invalid("a baseline set holds no trial".into()));
        }
        let mut ids: Vec<&str> = set.trials.iter().map(|t| t.trial.as_str()).collect();
        ids.sort_unstable();
        if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
            return Err(invalid(format!("trial `{}` is listed twice", w[0])));
        }
        Ok(Approved::Set(set))
    }

    /// The scenario and case it records.
    pub fn names(&self) -> (&str, &str) {
        match self {
            Approved::Single(b) => (&b.scenario, &b.case),
            Approved::Set(s) => (&s.scenario, &s.case),
        }
    }

    /// How many trials it holds (1 for a single baseline).
    pub fn trials(&self) -> usize {
        match self {
            Approved::Single(_) => 1,
            Approved::Set(s) => s.trials.len(),
        }
    }

    /// Its `format`.
    pub fn format(&self) -> &'static str {
        match self {
            Approved::Single(_) => BASELINE_FORMAT,
            Approved::Set(_) => SET_FORMAT,
        }
    }
}

mod trial_json {
    use serde::{Deserialize, Deserializer, Serialize, Serializer};

    use crate::trace::TrialId;

    pub(super) fn serialize<S: Serializer>(t: &TrialId, s: S) -> Result<S::Ok, S::Error> {
        t.serialize(s)
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(d: D) -> Result<TrialId, D::Error> {
        let v = serde_json::Value::deserialize(d)?;
        TrialId::from_json(&v.to_string()).map_err(serde::de::Error::custom)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn behaviour() -> Behaviour {
        serde_json::from_value(serde_json::json!({
            "tool_calls": [], "approvals": [], "messages": [], "final_answer": null,
            "status": "completed", "artifacts": [],
            "usage": {"input_tokens": 0, "output_tokens": 0, "requests": 0},
            "oracles": {"0:tool-called": "pass"}
        }))
        .unwrap()
    }

    #[test]
    fn a_set_round_trips_in_trial_order_with_integer_ids_as_numbers() {
        let trial = |id: &str| SetTrial {
            trial: TrialId::parse(id).unwrap(),
            content_hash: format!("b3:{id}"),
            behaviour: behaviour(),
        };
        let set = BaselineSet::new("s", "c", vec![trial("10"), trial("x"), trial("2")]);
        let text = set.to_text();
        assert!(text.contains("\"trial\": 2\n"), "{text}");
        assert!(text.contains("\"trial\": \"x\""), "{text}");
        let back = Approved::parse("b.json".into(), text.as_bytes()).unwrap();
        let Approved::Set(back) = back else {
            panic!("a set")
        };
        let ids: Vec<&str> = back.trials.iter().map(|t| t.trial.as_str()).collect();
        assert_eq!(ids, ["2", "10", "x"]);
        assert_eq!(back, set);
    }

    #[test]
    fn a_set_with_a_repeated_or_no_trial_is_invalid() {
        let text = |trials: &str| {
            format!(
                r#"{{"format":"tracereplay.baseline-set","version":1,"scenario":"s","case":"c","tool_version":"0","trials":{trials}}}"#
            )
        };
        let one = serde_json::json!({"trial": 1, "content_hash": "b3:1", "behaviour": behaviour()});
        let twice = format!("[{one},{one}]");
        for bad in [text("[]"), text(&twice), text("[{\"trial\": 1.5}]")] {
            assert!(
                Approved::parse("b.json".into(), bad.as_bytes()).is_err(),
                "{bad}"
            );
        }
    }
}
