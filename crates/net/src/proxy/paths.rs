//! The upstream URL the recorder may forward to.

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
