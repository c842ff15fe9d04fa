//! The recorder's upstream client: hyper's pooled HTTP/1 client, TLS through rustls with ring and
//! the Mozilla roots, plain HTTP where the upstream URL says so (the command line allows that only
//! for loopback, unless told otherwise).

use std::time::Duration;

use axum::body::Bytes;
use http_body_util::Full;
use hyper_util::client::legacy::Client;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::rt::TokioExecutor;

/// The client the recorder forwards with.
pub(super) type Upstream = Client<hyper_rustls::HttpsConnector<HttpConnector>, Full<Bytes>>;

/// A client that connects within 10 seconds, without Nagle's delay.
pub(super) fn upstream() -> std::io::Result<Upstream> {
    let mut http = HttpConnector::new();
    http.enforce_http(false);
    http.set_connect_timeout(Some(Duration::from_secs(10)));
    http.set_nodelay(true);
    let https = hyper_rustls::HttpsConnectorBuilder::new()
        .with_provider_and_webpki_roots(rustls::crypto::ring::default_provider())
        .map_err(std::io::Error::other)?
        .https_or_http()
        .enable_http1()
        .wrap_connector(http);
    Ok(Client::builder(TokioExecutor::new()).build(https))
}
