//! Why an oracle's parameters do not configure it, as data: the strict-parameter problems each
//! name their key and kind; a value the oracle's own check refuses is its message.

/// What is wrong with one parameter under the strict-parameter rules.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ParamProblemKind {
    /// A key the oracle type does not take.
    Unknown,
    /// A key given twice (under two spellings).
    Twice,
    /// A value of the wrong JSON type.
    WrongType,
}

/// One strict-parameter problem: the key as written (or canonical, for `Twice` and
/// `WrongType`), its kind, and the sentence `gates` and the report show.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ParamProblem {
    /// The key.
    pub key: String,
    /// What is wrong with it.
    pub kind: ParamProblemKind,
    /// The sentence shown.
    pub message: String,
}

/// Why an oracle is misconfigured.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum ConfigError {
    /// The strict-parameter rules: every problem, in the order of the keys as written.
    Params(Vec<ParamProblem>),
    /// The parameters are well formed, but a value is one the oracle cannot take (or one it
    /// needs is missing).
    Value(ValueProblem),
}

/// A value the oracle's own check refuses (or one it needs but lacks): the key it concerns,
/// when one key does, and the sentence shown.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ValueProblem {
    /// The key (`threshold`, `calls[2].args`, `trials.median`…), in its canonical spelling;
    /// `None` when the problem is of the oracle as a whole (two keys that exclude each other, a
    /// contract that does not load).
    pub key: Option<String>,
    /// The sentence shown.
    pub message: String,
}

impl ConfigError {
    /// A refused value of `key`.
    pub fn value(key: impl Into<String>, message: impl Into<String>) -> ConfigError {
        ConfigError::Value(ValueProblem {
            key: Some(key.into()),
            message: message.into(),
        })
    }
}

impl ConfigError {
    /// The keys the problems concern: each the strict-parameter rules object to, or the refused
    /// value's (none when the problem is of the oracle as a whole).
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        let (problems, value) = match self {
            ConfigError::Params(p) => (p.as_slice(), None),
            ConfigError::Value(v) => (&[][..], v.key.as_deref()),
        };
        problems.iter().map(|p| p.key.as_str()).chain(value)
    }
}

impl std::fmt::Display for ConfigError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ConfigError::Params(problems) => {
                for (i, p) in problems.iter().enumerate() {
                    if i > 0 {
                        f.write_str("; ")?;
                    }
                    f.write_str(&p.message)?;
                }
                Ok(())
            }
            ConfigError::Value(v) => f.write_str(&v.message),
        }
    }
}

impl std::error::Error for ConfigError {}

impl From<&str> for ConfigError {
    fn from(message: &str) -> Self {
        ConfigError::from(message.to_owned())
    }
}

impl From<String> for ConfigError {
    fn from(message: String) -> Self {
        ConfigError::Value(ValueProblem { key: None, message })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::oracle::spec::OracleSpec;

    fn configured(params: serde_json::Value) -> Result<crate::oracle::Oracle, ConfigError> {
        let serde_json::Value::Object(map) = params else {
            unreachable!()
        };
        OracleSpec::new(0, map).oracle.expect("a known type")
    }

    #[test]
    fn parameter_problems_name_their_keys_and_kinds_and_read_as_before() {
        let e = configured(serde_json::json!({
            "type": "tool-called", "tol": "search", "tool": 3
        }))
        .unwrap_err();
        let ConfigError::Params(problems) = &e else {
            panic!("{e:?}")
        };
        let kinds: Vec<(&str, ParamProblemKind)> =
            problems.iter().map(|p| (p.key.as_str(), p.kind)).collect();
        assert_eq!(
            kinds,
            [
                ("tol", ParamProblemKind::Unknown),
                ("tool", ParamProblemKind::WrongType)
            ]
        );
        assert_eq!(e.keys().collect::<Vec<_>>(), ["tol", "tool"]);
        // The sentence is every problem's, joined as the reports have always shown it.
        let shown = e.to_string();
        assert!(
            shown.starts_with("unknown parameter `tol` for tool-called"),
            "{shown}"
        );
        assert!(shown.contains("; `tool` must be a string"), "{shown}");
    }

    #[test]
    fn a_refused_value_names_its_key() {
        for (params, key) in [
            (
                serde_json::json!({"type": "tool-called", "tool": "a", "threshold": 2}),
                "threshold",
            ),
            (
                serde_json::json!({"type": "tool-call-count", "tool": "a", "min": 5, "max": 2}),
                "min",
            ),
            (
                serde_json::json!({"type": "tool-sequence", "mode": "exact", "calls": [{"tool": "a"}, {"tool": "b", "args": null}]}),
                "calls[1].args",
            ),
            (
                serde_json::json!({"type": "tool-sequence", "mode": "exact", "tools": ["a"], "argsMatch": "loose"}),
                "argsMatch",
            ),
            (
                serde_json::json!({"type": "max-tokens", "limit": 5, "trials": {"mean": 3}}),
                "trials.mean",
            ),
            (serde_json::json!({"type": "expr"}), "jq"),
        ] {
            let e = configured(params.clone()).unwrap_err();
            let ConfigError::Value(v) = &e else {
                panic!("{params}: {e:?}")
            };
            assert_eq!(v.key.as_deref(), Some(key), "{params}: {e}");
            assert_eq!(e.keys().collect::<Vec<_>>(), [key]);
            assert!(e.to_string().contains(key), "{params}: {e}");
        }
    }

    #[test]
    fn a_refused_value_is_its_message_with_no_key() {
        let e = configured(serde_json::json!({"type": "tool-called"})).unwrap_err();
        assert!(matches!(e, ConfigError::Value(_)), "{e:?}");
        assert_eq!(e.keys().count(), 0);
        assert!(!e.to_string().is_empty());
    }
}
