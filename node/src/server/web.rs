//! The pages the node serves beside its API, from the binary itself (embedded at build time by
//! `node/build_web.rs` from `node/web/site/` and the SDK's browser bundle): the explorer at `/`,
//! the games at `/play/tictactoe/`, `/play/mnk/`, `/play/dice/` (rolled from the beacon,
//! docs/randomness.md), `/play/sealed-rps/` and `/play/auction/` (moves and bids sealed in the
//! page to a round of the beacon, opened by the chain: docs/sealed-moves.md) and `/play/rps/`
//! (off-chain, docs/channels.md), the match verifier at
//! `/verify/`, the SDK at `/sdk/` (`/sdk/gamechain.js`), the typed clients the pages play through
//! (`/clients/<id>.ts` and its compiled `/clients/<id>.js` for tictactoe, mnk and channel, made by
//! `node/build.rs` with `gamechain module codegen --ts`'s generator), and the page of `gamechain
//! dev` at `/dev/?module=<id>` (a module's ops as forms, its views and live events, from its
//! schema), and `/favicon.ico` (so no page's load logs a 404).
//!
//! A path ending in `/` serves that folder's `index.html`; the same path without the slash
//! redirects to it. Answers carry `cache-control: no-cache` (the bytes change with the binary),
//! `x-content-type-options: nosniff` and a content security policy that allows only this origin
//! (scripts, styles, fetch and the WebSocket) plus compiling WebAssembly (`'wasm-unsafe-eval'`:
//! `/play/rps/` runs the rules `.wasm` of `/v1/code/<hash>` in the page; no JavaScript `eval`)
//! and Workers from this origin or a `blob:` URL (the SDK runs rules calls in a Worker it makes
//! from a Blob, so a rules module that never ends is stopped by a timeout, not the page).
//! Unknown paths stay the API's JSON `404 not_found`.

use axum::http::{header, HeaderValue};
use axum::response::{IntoResponse, Redirect, Response};
use axum::routing::get;
use axum::Router;

include!(concat!(env!("OUT_DIR"), "/web_assets.rs"));

/// The content security policy of every page.
const CSP: &str = "default-src 'self'; script-src 'self' 'wasm-unsafe-eval'; \
                   worker-src 'self' blob:; connect-src 'self' ws: wss:; img-src 'self' data:; \
                   object-src 'none'; base-uri 'none'; frame-ancestors 'none'";

/// Whether this binary embeds the real SDK bundle (built with Node.js present).
pub fn bundle_built() -> bool {
    WEB_BUNDLE_BUILT
}

/// The routes of every embedded file (and of each folder with an `index.html`).
pub fn routes<S: Clone + Send + Sync + 'static>() -> Router<S> {
    let mut router = Router::new();
    for &(path, content_type, bytes) in WEB_ASSETS {
        let serve = move || async move { page(content_type, bytes) };
        router = router.route(path, get(serve));
        if let Some(folder) = path.strip_suffix("index.html") {
            router = router.route(folder, get(serve));
            if let Some(bare) = folder.strip_suffix('/').filter(|b| !b.is_empty()) {
                router = router.route(
                    bare,
                    get(move || async move { Redirect::permanent(folder) }),
                );
            }
        }
    }
    router
}

fn page(content_type: &'static str, bytes: &'static [u8]) -> Response {
    let mut response = bytes.into_response();
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    headers.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    headers.insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(CSP),
    );
    response
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_page_and_the_bundle_are_embedded() {
        let paths: Vec<&str> = WEB_ASSETS.iter().map(|a| a.0).collect();
        for want in [
            "/index.html",
            "/play/tictactoe/index.html",
            "/play/mnk/index.html",
            "/play/dice/index.html",
            "/play/dice/app.js",
            "/play/sealed-rps/index.html",
            "/play/sealed-rps/app.js",
            "/play/auction/index.html",
            "/play/auction/app.js",
            "/verify/index.html",
            "/play/rps/index.html",
            "/play/rps/app.js",
            "/sdk/index.html",
            "/sdk/gamechain.js",
            "/dev/index.html",
            "/dev/dev.js",
            "/favicon.ico",
        ] {
            assert!(paths.contains(&want), "{want} missing from {paths:?}");
        }
        let bundle = WEB_ASSETS
            .iter()
            .find(|a| a.0 == "/sdk/gamechain.js")
            .unwrap();
        if bundle_built() {
            assert!(bundle.2.len() > 10_000, "a real bundle");
        } else {
            assert!(String::from_utf8_lossy(bundle.2).contains("Node.js"));
        }
    }

    /// Every page's load asks for `/favicon.ico`; it is an icon, not the API's JSON 404.
    #[tokio::test]
    async fn the_favicon_is_served_as_an_icon() {
        let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let app: Router = routes();
        tokio::spawn(async move { axum::serve(listener, app).await });
        let r = reqwest::get(format!("http://{addr}/favicon.ico"))
            .await
            .unwrap();
        assert_eq!(r.status(), 200);
        assert_eq!(r.headers()[header::CONTENT_TYPE], "image/x-icon");
        let bytes = r.bytes().await.unwrap();
        assert_eq!(&bytes[..4], &[0, 0, 1, 0], "an ICO header");
    }
}
