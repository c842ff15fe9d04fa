//! The recorder's paths: a session named in the request path (`/record/<scenario>/<case>/…`),
//! percent-decoding, and the upstream URL it may forward to.

/// Splits `/record/<scenario>/<case>/<rest>` (percent-decoded names) from a request path.
pub(super) fn split_path(path: &str) -> (Option<(String, String)>, String) {
    let Some(tail) = path.strip_prefix("/record/") else {
        return (None, path.to_owned());
    };
    let mut parts = tail.splitn(3, '/');
    match (parts.next(), parts.next()) {
        (Some(s), Some(c)) if !s.is_empty() && !c.is_empty() => {
            let rest = parts.next().map_or_else(String::new, |r| format!("/{r}"));
            (Some((decode(s, false), decode(c, false))), rest)
        }
        _ => (None, path.to_owned()),
    }
}

/// `%XX` sequences of a path segment decoded (`+` too, as a space, when `plus` — a query
/// value); invalid ones kept as they are.
pub(crate) fn decode(segment: &str, plus: bool) -> String {
    let b = segment.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        let hex = |c: u8| (c as char).to_digit(16);
        match (
            b[i],
            b.get(i + 1).copied().and_then(hex),
            b.get(i + 2).copied().and_then(hex),
        ) {
            (b'%', Some(h), Some(l)) => {
                out.push((h * 16 + l) as u8);
                i += 3;
            }
            (b'+', _, _) if plus => {
                out.push(b' ');
                i += 1;
            }
            (c, _, _) => {
                out.push(c);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// Checks an upstream URL: `https`, or plain `http` to a loopback host (`localhost`, `127.x`,
/// `::1`) unless `allow_insecure`; no credentials, query or fragment in it. Returns it without
/// a trailing slash.
pub fn check_upstream(url: &str, allow_insecure: bool) -> Result<String, String> {
    let shown = crate::paths::redact_url(url);
    let parsed: axum::http::Uri = url
        .parse()
        .map_err(|e| format!("`{shown}` is not a URL: {e}"))?;
    let authority = parsed
        .authority()
        .ok_or_else(|| format!("`{shown}` names no host"))?;
    if authority.as_str().contains('@') {
        return Err(format!(
            "`{shown}` carries credentials: send them as the client's headers, which the recorder forwards and never writes"
        ));
    }
    if parsed.query().is_some() || url.contains('#') {
        return Err(format!(
            "`{shown}`: an upstream URL has no query or fragment"
        ));
    }
    let host = authority
        .host()
        .trim_start_matches('[')
        .trim_end_matches(']');
    let loopback = host.eq_ignore_ascii_case("localhost")
        || host
            .parse::<std::net::IpAddr>()
            .is_ok_and(|ip| ip.is_loopback());
    match parsed.scheme_str() {
        Some("https") => {}
        Some("http") if loopback || allow_insecure => {}
        Some("http") => {
            return Err(format!(
                "`{shown}` is plain HTTP to a host that is not loopback: credentials would cross the network unencrypted; use https, or pass --allow-insecure-upstream to mean it"
            ));
        }
        other => {
            return Err(format!(
                "`{shown}`: the upstream must be http or https, not {}",
                other.unwrap_or("a relative URL")
            ));
        }
    }
    Ok(url.trim_end_matches('/').to_owned())
}
