//! How paths are shown: a leaf module every layer may use (reports, baselines, judging), so that
//! naming a file in a message never depends on discovery.

use std::path::PathBuf;

use camino::Utf8Path;

/// A path printed relative to the working directory, with `/` separators and no leading `./`.
/// A `scheme://` URL is shown with what could be a secret hidden ([`redact_url`]).
pub fn display_path(path: &Utf8Path) -> String {
    let p = relative_to_cwd(path);
    if p.contains("://") {
        return redact_url(p);
    }
    if !p.contains('\\') {
        return p.to_owned();
    }
    // A Windows `.\` reads as `./` only once its separators are turned.
    without_dot_slash(&p.replace('\\', "/")).to_owned()
}

/// `path` relative to the working directory when it lies under it, without a leading `./` (nor
/// the slashes after one): the part of [`display_path`] that borrows, for keys taken on a hot
/// path. The working directory is asked for once per process; it does not change during a run.
pub fn relative_to_cwd(path: &Utf8Path) -> &str {
    static CWD: std::sync::OnceLock<Option<PathBuf>> = std::sync::OnceLock::new();
    let mut s = path.as_str();
    if path.is_absolute() {
        let cwd = CWD.get_or_init(|| std::env::current_dir().ok());
        // The working directory's text then `/` (as discovery joins paths): no walk over
        // components. Else (a `/./` or `//` within the working directory's part) by components.
        let by_text = (cwd.as_ref().and_then(|c| c.to_str()))
            .and_then(|c| s.strip_prefix(c))
            .and_then(|rest| rest.strip_prefix('/'))
            .map(|rest| rest.trim_start_matches('/'));
        let rel = by_text.or_else(|| {
            (cwd.as_ref())
                .and_then(|cwd| path.as_std_path().strip_prefix(cwd).ok())
                .and_then(Utf8Path::from_path)
                .map(Utf8Path::as_str)
        });
        if let Some(rel) = rel {
            s = rel;
        }
    }
    without_dot_slash(s)
}

/// `s` without its leading `./` (as many as it has, and the slashes after each).
fn without_dot_slash(mut s: &str) -> &str {
    while let Some(rest) = s.strip_prefix("./") {
        s = rest.trim_start_matches('/');
    }
    s
}

/// `url` with what could be a secret hidden: the password of its user information
/// (`https://user:***@host/`) and the value of each query parameter (`?api_key=***`). Anything
/// that is no `scheme://` URL is returned as it is.
pub fn redact_url(url: &str) -> String {
    let Some((scheme, rest)) = url.split_once("://") else {
        return url.to_owned();
    };
    let valid_scheme = !scheme.is_empty()
        && scheme
            .chars()
            .next()
            .is_some_and(|c| c.is_ascii_alphabetic())
        && scheme
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || "+-.".contains(c));
    if !valid_scheme {
        return url.to_owned();
    }
    let (before_fragment, fragment) = match rest.split_once('#') {
        Some((b, f)) => (b, Some(f)),
        None => (rest, None),
    };
    let (before_query, query) = match before_fragment.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (before_fragment, None),
    };
    let authority_end = before_query.find('/').unwrap_or(before_query.len());
    let (authority, path) = before_query.split_at(authority_end);
    // A password is hidden; a user name alone may be a token (`https://TOKEN@host/`), so it is
    // hidden whole.
    let authority = match authority.rsplit_once('@') {
        Some((userinfo, host)) => match userinfo.split_once(':') {
            Some((user, _)) => format!("{user}:***@{host}"),
            None => format!("***@{host}"),
        },
        None => authority.to_owned(),
    };
    let mut out = format!("{scheme}://{authority}{path}");
    if let Some(q) = query {
        let pairs: Vec<String> = (q.split('&'))
            .map(|pair| match pair.split_once('=') {
                Some((k, v)) if !v.is_empty() => format!("{k}=***"),
                _ => pair.to_owned(),
            })
            .collect();
        out.push('?');
        out.push_str(&pairs.join("&"));
    }
    if let Some(f) = fragment {
        out.push('#');
        out.push_str(f);
    }
    out
}

/// `text` with every `scheme://` URL in it redacted ([`redact_url`]): for messages that may
/// name a URL a user gave with a secret in it.
pub fn redact_urls_in(text: &str) -> String {
    if !text.contains("://") {
        return text.to_owned();
    }
    let mut out = String::with_capacity(text.len());
    let mut rest = text;
    while let Some(at) = rest.find("://") {
        // The scheme runs back from `://` over scheme characters.
        let head = &rest[..at];
        let start = head
            .char_indices()
            .rev()
            .take_while(|(_, c)| c.is_ascii_alphanumeric() || "+-.".contains(*c))
            .last()
            .map_or(at, |(i, _)| i);
        // The URL runs on to whitespace or a quote.
        let end = rest[at..]
            .find(|c: char| c.is_whitespace() || "`'\"<>".contains(c))
            .map_or(rest.len(), |e| at + e);
        out.push_str(&rest[..start]);
        out.push_str(&redact_url(&rest[start..end]));
        rest = &rest[end..];
    }
    out.push_str(rest);
    out
}

#[cfg(test)]
mod redact_tests {
    use super::*;

    #[test]
    fn passwords_and_query_values_are_hidden() {
        assert_eq!(
            redact_url("https://ci:s3cret@collector.example:4318/v1/logs?api_key=abc&x=&debug"),
            "https://ci:***@collector.example:4318/v1/logs?api_key=***&x=&debug"
        );
        assert_eq!(redact_url("https://ghp_token@h/p"), "https://***@h/p");
        assert_eq!(redact_url("s3://bucket/key.zst"), "s3://bucket/key.zst");
        assert_eq!(redact_url("traces/a.zst"), "traces/a.zst");
        assert_eq!(
            redact_urls_in("cannot send to `http://u:pw@127.0.0.1:1/v1/logs?token=t`: refused"),
            "cannot send to `http://u:***@127.0.0.1:1/v1/logs?token=***`: refused"
        );
        assert_eq!(redact_urls_in("no url here"), "no url here");
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A path is shown relative to the working directory, without leading `./` (nor the
    /// slashes after one), with `/` separators; the borrowing part gives the same string.
    #[test]
    fn paths_are_shown_relative_without_a_leading_dot_slash() {
        let cwd = std::env::current_dir().unwrap();
        let cwd = cwd.to_str().unwrap();
        for (path, shown) in [
            ("traces/a.zst", "traces/a.zst"),
            ("./traces/a.zst", "traces/a.zst"),
            (".//./traces/a.zst", "traces/a.zst"),
            ("../up/a.zst", "../up/a.zst"),
            ("/elsewhere/a.zst", "/elsewhere/a.zst"),
            (&format!("{cwd}/traces/a.zst"), "traces/a.zst"),
            (&format!("{cwd}//traces/a.zst"), "traces/a.zst"),
            (&format!("{cwd}/./traces/a.zst"), "traces/a.zst"),
            (
                &format!("{cwd}X/traces/a.zst"),
                &format!("{cwd}X/traces/a.zst"),
            ),
            (&format!("{cwd}/"), ""),
        ] {
            assert_eq!(display_path(Utf8Path::new(path)), shown, "{path}");
            assert_eq!(relative_to_cwd(Utf8Path::new(path)), shown, "{path}");
        }
        assert_eq!(
            display_path(Utf8Path::new(".\\traces\\a.zst")),
            "traces/a.zst"
        );
        assert_eq!(
            display_path(Utf8Path::new("s3://u:secret@bucket/x?api_key=k")),
            "s3://u:***@bucket/x?api_key=***"
        );
    }
}
