//! How a request names its session, alike for `record` and `replay serve`: by its path
//! (`/record/<scenario>/<case>/…`, `/replay/<scenario>/<case>/…`, and for a trial of the case
//! `…/<scenario>/<case>/trial/<trial>/…`), or by the `X-Tracereplay-Case: <scenario>/<case>`
//! and `X-Tracereplay-Trial: <trial>` headers. A trial named in the path wins over the header.

use std::collections::BTreeMap;

use axum::extract::Path;
use axum::http::HeaderMap;

/// The header that names a session.
pub const CASE_HEADER: &str = "x-tracereplay-case";
/// The header that names a session's trial.
pub const TRIAL_HEADER: &str = "x-tracereplay-trial";

/// A session's name as a request gives it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct Named {
    pub(crate) scenario: String,
    pub(crate) case: String,
    /// The trial, as given (checked by whoever records it).
    pub(crate) trial: Option<String>,
}

impl Named {
    /// `scenario/case`, and ` trial T` for a trial: how sessions are keyed and shown.
    pub(crate) fn key(&self) -> String {
        key(&self.scenario, &self.case, self.trial.as_deref())
    }

    /// The name a request's path gives, else its headers'; `Err` for a malformed header.
    pub(crate) fn of(path: Option<Named>, headers: &HeaderMap) -> Result<Option<Named>, String> {
        let trial = match headers.get(TRIAL_HEADER) {
            Some(v) => Some(
                (v.to_str().map(str::to_owned))
                    .map_err(|_| "X-Tracereplay-Trial is not text".to_owned())?,
            ),
            None => None,
        };
        let named = match path {
            Some(n) => n,
            None => {
                let Some(value) = headers.get(CASE_HEADER) else {
                    return Ok(None);
                };
                let value = value.to_str().unwrap_or("");
                let (s, c) = value
                    .split_once('/')
                    .ok_or("X-Tracereplay-Case must be <scenario>/<case>")?;
                Named {
                    scenario: s.to_owned(),
                    case: c.to_owned(),
                    trial: None,
                }
            }
        };
        Ok(Some(Named {
            trial: named.trial.or(trial),
            ..named
        }))
    }

    /// The axum path parameters of a `/replay/{scenario}/{case}[/trial/{trial}]/…` route.
    pub(crate) fn of_params(path: Option<Path<BTreeMap<String, String>>>) -> Option<Named> {
        let Path(mut params) = path?;
        Some(Named {
            scenario: params.remove("scenario")?,
            case: params.remove("case")?,
            trial: params.remove("trial"),
        })
    }
}

/// `scenario/case`, and ` trial T` for a trial.
pub(crate) fn key(scenario: &str, case: &str, trial: Option<&str>) -> String {
    match trial {
        Some(t) => format!("{scenario}/{case} trial {t}"),
        None => format!("{scenario}/{case}"),
    }
}

/// Splits `/<prefix>/<scenario>/<case>[/trial/<trial>]/<rest>` (names percent-decoded) from a
/// request path; a path not under `/<prefix>/` names nothing and is all rest.
pub(crate) fn split_path<'p>(prefix: &str, path: &'p str) -> (Option<Named>, &'p str) {
    let Some(tail) = path
        .strip_prefix('/')
        .and_then(|p| p.strip_prefix(prefix))
        .and_then(|p| p.strip_prefix('/'))
    else {
        return (None, path);
    };
    let mut parts = tail.splitn(3, '/');
    let (Some(s), Some(c)) = (parts.next(), parts.next()) else {
        return (None, path);
    };
    if s.is_empty() || c.is_empty() {
        return (None, path);
    }
    let rest = parts
        .next()
        .map_or("", |r| &path[path.len() - r.len() - 1..]);
    let trial = rest.strip_prefix("/trial/").and_then(|t| {
        let (t, after) = t.split_at(t.find('/').unwrap_or(t.len()));
        (!t.is_empty()).then_some((t, after))
    });
    let (trial, rest) = match trial {
        Some((t, after)) => (Some(decode(t, false)), after),
        None => (None, rest),
    };
    let named = Named {
        scenario: decode(s, false),
        case: decode(c, false),
        trial,
    };
    (Some(named), rest)
}

/// `%XX` sequences of a path segment decoded (`+` too, as a space, when `plus` — a query
/// value); invalid ones kept as they are.
pub(crate) use crate::common::segment::percent_decode as decode;

#[cfg(test)]
mod tests {
    use super::*;

    fn named(s: &str, c: &str, t: Option<&str>) -> Option<Named> {
        Some(Named {
            scenario: s.into(),
            case: c.into(),
            trial: t.map(Into::into),
        })
    }

    #[test]
    fn a_path_names_scenario_case_and_trial() {
        let p = "/record/weather/paris%20day/v1/chat/completions";
        assert_eq!(
            split_path("record", p),
            (named("weather", "paris day", None), "/v1/chat/completions")
        );
        let p = "/record/weather/paris/trial/3/v1/messages";
        assert_eq!(
            split_path("record", p),
            (named("weather", "paris", Some("3")), "/v1/messages")
        );
        let p = "/record/weather/paris/trial/3";
        assert_eq!(
            split_path("record", p),
            (named("weather", "paris", Some("3")), "")
        );
        // An empty trial segment names no trial; another prefix names nothing.
        let p = "/record/weather/paris/trial//v1";
        assert_eq!(
            split_path("record", p),
            (named("weather", "paris", None), "/trial//v1")
        );
        assert_eq!(split_path("record", "/v1/chat"), (None, "/v1/chat"));
        assert_eq!(
            split_path("record", "/recorder/a/b"),
            (None, "/recorder/a/b")
        );
        assert_eq!(split_path("record", "/record/a"), (None, "/record/a"));
    }

    #[test]
    fn headers_name_a_session_and_a_path_trial_wins() {
        let mut h = HeaderMap::new();
        assert_eq!(Named::of(None, &h), Ok(None));
        h.insert(CASE_HEADER, "s/c".parse().unwrap());
        h.insert(TRIAL_HEADER, "2".parse().unwrap());
        assert_eq!(Named::of(None, &h), Ok(named("s", "c", Some("2"))));
        let path = named("p", "q", Some("5"));
        assert_eq!(Named::of(path, &h), Ok(named("p", "q", Some("5"))));
        assert_eq!(
            Named::of(named("p", "q", None), &h),
            Ok(named("p", "q", Some("2")))
        );
        h.insert(CASE_HEADER, "nocase".parse().unwrap());
        assert!(Named::of(None, &h).is_err());
        assert_eq!(named("s", "c", Some("2")).unwrap().key(), "s/c trial 2");
    }
}
