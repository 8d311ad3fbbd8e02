//! What every HTTP request passes before it reaches the session: the
//! `Host` it names (no DNS rebinding), its `Origin` (no other site's
//! page), and for `/rpc` and `/events` the session's token; and the
//! headers every answer carries (a strict Content-Security-Policy).

use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Request, State};
use axum::http::{HeaderMap, HeaderValue, StatusCode, header};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

use super::App;

/// The page's policy: its own scripts, styles and requests only, never
/// framed.
const CONTENT_SECURITY_POLICY: &str = "default-src 'none'; script-src 'self'; \
    style-src 'self'; img-src 'self' data:; connect-src 'self'; base-uri 'none'; \
    form-action 'none'; frame-ancestors 'none'";

/// A fresh token: 128 random bits as 32 hexadecimal digits.
pub fn new_token() -> std::io::Result<String> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(std::io::Error::other)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

/// The `Host` values that name the server listening on `addr`: its
/// loopback names with the port, and the address itself.
pub fn hosts(addr: SocketAddr) -> Vec<String> {
    let port = addr.port();
    let mut hosts = vec![
        format!("127.0.0.1:{port}"),
        format!("localhost:{port}"),
        format!("[::1]:{port}"),
    ];
    let own = addr.to_string();
    if !addr.ip().is_unspecified() && !hosts.contains(&own) {
        hosts.push(own);
    }
    hosts
}

/// `a == b` in a time that does not depend on where they differ.
pub fn same_secret(a: &[u8], b: &[u8]) -> bool {
    if a.len() != b.len() {
        return false;
    }
    let differ = a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y));
    std::hint::black_box(differ) == 0
}

/// The token a request carries: `Authorization: Bearer T`, else
/// `?token=T`.
fn token_of<'r>(headers: &'r HeaderMap, query: Option<&'r str>) -> Option<&'r str> {
    if let Some(value) = headers.get(header::AUTHORIZATION) {
        return value.to_str().ok()?.strip_prefix("Bearer ");
    }
    query?
        .split('&')
        .find_map(|pair| pair.strip_prefix("token="))
}

/// Why a request is refused, if it is.
fn refusal(app: &App, request: &Request) -> Option<(StatusCode, &'static str)> {
    let headers = request.headers();
    let host = headers.get(header::HOST).and_then(|h| h.to_str().ok());
    if !host.is_some_and(|host| app.hosts.iter().any(|h| h == host)) {
        return Some((
            StatusCode::FORBIDDEN,
            "the Host header does not name this server",
        ));
    }
    if let Some(origin) = headers.get(header::ORIGIN) {
        let own = origin
            .to_str()
            .ok()
            .and_then(|o| o.strip_prefix("http://"))
            .is_some_and(|o| app.hosts.iter().any(|h| h == o));
        if !own {
            return Some((StatusCode::FORBIDDEN, "a request from another site's page"));
        }
    }
    let path = request.uri().path();
    if path == "/rpc" || path == "/events" {
        let given = token_of(headers, request.uri().query());
        if !given.is_some_and(|t| same_secret(t.as_bytes(), app.token.as_bytes())) {
            return Some((
                StatusCode::UNAUTHORIZED,
                "no token or a wrong one: use the URL the server printed",
            ));
        }
    }
    None
}

/// The middleware: refuses what [`refusal`] refuses, and adds the
/// security headers to every answer.
pub async fn check(State(app): State<Arc<App>>, request: Request, next: Next) -> Response {
    let mut response = match refusal(&app, &request) {
        Some((status, why)) => (status, format!("{why}\n")).into_response(),
        None => next.run(request).await,
    };
    let headers = response.headers_mut();
    for (name, value) in [
        (header::CONTENT_SECURITY_POLICY, CONTENT_SECURITY_POLICY),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
        // The page's URL carries the token: never sent on.
        (header::REFERRER_POLICY, "no-referrer"),
        (header::CACHE_CONTROL, "no-store"),
    ] {
        headers.insert(name, HeaderValue::from_static(value));
    }
    headers.insert(
        header::HeaderName::from_static("cross-origin-resource-policy"),
        HeaderValue::from_static("same-origin"),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn secrets_compare_whole() {
        assert!(same_secret(b"abcd", b"abcd"));
        assert!(!same_secret(b"abcd", b"abce"));
        assert!(!same_secret(b"abcd", b"abc"));
        assert!(!same_secret(b"", b"a"));
    }

    #[test]
    fn tokens_are_fresh_and_hexadecimal() {
        let (a, b) = (new_token().unwrap(), new_token().unwrap());
        assert_ne!(a, b);
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
    }

    #[test]
    fn a_token_is_read_from_the_header_first() {
        let mut headers = HeaderMap::new();
        assert_eq!(token_of(&headers, Some("a=1&token=x")), Some("x"));
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Bearer y"));
        assert_eq!(token_of(&headers, Some("token=x")), Some("y"));
        headers.insert(header::AUTHORIZATION, HeaderValue::from_static("Basic y"));
        assert_eq!(token_of(&headers, Some("token=x")), None);
    }
}
