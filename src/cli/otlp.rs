//! `check --otlp FILE` and `--otlp-endpoint URL`: the verdicts as OTLP/JSON logs, written to a
//! file and/or sent over OTLP/HTTP.

use std::time::Duration;

use tracereplay::report::{self, ExportContext, Format, Report};

/// The environment variable of OTLP exporters that holds the headers to send.
const HEADERS_ENV: &str = "OTEL_EXPORTER_OTLP_HEADERS";

/// Sends the OTLP/JSON logs of `report` (its exporter's bytes, as `--otlp FILE` writes them)
/// to `endpoint`; what could not be done, in words (the run then ends with exit 2, after every
/// report is written).
pub(super) fn send_to(report: &Report, ctx: &ExportContext<'_>, endpoint: &str) -> Vec<String> {
    let mut problems = Vec::new();
    let mut body = Vec::new();
    if let Err(e) = Format::Otlp.export(report, ctx, &mut body) {
        return vec![format!("cannot render the OpenTelemetry logs: {e}")];
    }
    if let Err(e) = send(endpoint, &body) {
        problems.push(format!(
            "cannot send the OpenTelemetry logs to `{}`: {e}",
            logs_url(endpoint)
        ));
    }
    // The endpoint (and the client's error, which may repeat it) can hold a password or a
    // token in its user information or query: never printed.
    (problems.iter())
        .map(|p| tracereplay_trace::paths::redact_urls_in(p))
        .collect()
}

/// The logs endpoint: a URL without a path gets `/v1/logs`, as OTLP exporters do with a base
/// endpoint.
fn logs_url(url: &str) -> String {
    let trimmed = url.trim_end_matches('/');
    let after_scheme = trimmed.split_once("://").map_or(trimmed, |(_, rest)| rest);
    if after_scheme.contains('/') {
        url.to_owned()
    } else {
        format!("{trimmed}/v1/logs")
    }
}

/// `key=value,key2=value2`, percent-decoded values, as OTLP exporters read the variable.
fn headers() -> Result<Vec<(String, String)>, String> {
    let Ok(raw) = std::env::var(HEADERS_ENV) else {
        return Ok(Vec::new());
    };
    let mut out = Vec::new();
    for pair in raw.split(',').filter(|p| !p.trim().is_empty()) {
        let Some((k, v)) = pair.split_once('=') else {
            return Err(format!(
                "`{HEADERS_ENV}` holds an entry without `=` (entries are `key=value`, comma-separated)"
            ));
        };
        out.push((k.trim().to_owned(), percent_decode(v.trim())));
    }
    Ok(out)
}

/// Header values as the OpenTelemetry SDKs read `OTEL_EXPORTER_OTLP_HEADERS` (`%XX` decoded,
/// `+` kept).
fn percent_decode(s: &str) -> String {
    tracereplay_trace::common::segment::percent_decode(s, false)
}

/// POSTs the logs; the error says what failed (a status and the start of the answer, or the
/// connection's error), never a header's value.
fn send(url: &str, body: &[u8]) -> Result<(), String> {
    let agent: ureq::Agent = ureq::Agent::config_builder()
        .timeout_global(Some(Duration::from_secs(30)))
        .http_status_as_error(false)
        .build()
        .into();
    let mut request = agent
        .post(&logs_url(url))
        .header("Content-Type", "application/json");
    for (k, v) in headers()? {
        request = request.header(k.as_str(), v.as_str());
    }
    let mut answer = request.send(body).map_err(|e| e.to_string())?;
    let status = answer.status();
    if status.is_success() {
        return Ok(());
    }
    let text = answer
        .body_mut()
        .with_config()
        .limit(4096)
        .read_to_string()
        .unwrap_or_default();
    let text: String = text.chars().take(200).collect();
    Err(format!(
        "the endpoint answered {status}: {}",
        report::escape_controls(text.trim())
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_base_endpoint_gets_the_logs_path() {
        assert_eq!(
            logs_url("http://127.0.0.1:4318"),
            "http://127.0.0.1:4318/v1/logs"
        );
        assert_eq!(
            logs_url("http://127.0.0.1:4318/"),
            "http://127.0.0.1:4318/v1/logs"
        );
        assert_eq!(
            logs_url("https://h/api/otel/v1/logs"),
            "https://h/api/otel/v1/logs"
        );
    }

    #[test]
    fn header_values_are_percent_decoded() {
        assert_eq!(percent_decode("Basic%20abc%3D"), "Basic abc=");
        assert_eq!(percent_decode("100%"), "100%");
    }
}
