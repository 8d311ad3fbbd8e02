//! The browser viewer's files (`cli/web/`), built into the binary: plain
//! JavaScript modules, a style sheet and the page, nothing loaded from
//! elsewhere. None holds data; they are served without the token.

use std::sync::Arc;

use axum::Router;
use axum::http::header;
use axum::routing::get;

use super::App;

/// Each file's path, type and text.
const FILES: [(&str, &str, &str); 8] = [
    (
        "/",
        "text/html; charset=utf-8",
        include_str!("../../../web/index.html"),
    ),
    (
        "/style.css",
        "text/css; charset=utf-8",
        include_str!("../../../web/style.css"),
    ),
    (
        "/app.js",
        "text/javascript; charset=utf-8",
        include_str!("../../../web/app.js"),
    ),
    (
        "/rpc.js",
        "text/javascript; charset=utf-8",
        include_str!("../../../web/rpc.js"),
    ),
    (
        "/tree.js",
        "text/javascript; charset=utf-8",
        include_str!("../../../web/tree.js"),
    ),
    (
        "/flame.js",
        "text/javascript; charset=utf-8",
        include_str!("../../../web/flame.js"),
    ),
    (
        "/list.js",
        "text/javascript; charset=utf-8",
        include_str!("../../../web/list.js"),
    ),
    (
        "/favicon.svg",
        "image/svg+xml",
        include_str!("../../../web/favicon.svg"),
    ),
];

/// The routes of the page's files.
pub fn routes() -> Router<Arc<App>> {
    FILES
        .iter()
        .fold(Router::new(), |router, &(path, kind, text)| {
            router.route(
                path,
                get(move || async move { ([(header::CONTENT_TYPE, kind)], text) }),
            )
        })
}
