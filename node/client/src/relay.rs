//! [`Relay`]: one connection to a node's move relay (`GET /v1/relay/<game>`, `node/API.md`,
//! "Move relay"): send a signed channel move to the other player at once, off-chain, and
//! receive theirs. Every connection is one seat's: it opens with a signed seat hello
//! ([`RelayHello`], the game key's signature of [`hello_text`]), so only the game's players can
//! hold a connection, and `to` (how many connections got a move) counts the opponent's
//! connections only. The node checks each move's signature and seat and stores nothing; a move
//! the opponent was not connected to receive (`to: 0`) is lost there, so callers fall back to
//! the move board.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde::{Deserialize, Serialize};
use tokio_tungstenite::tungstenite::Message;

use gamechain_chain::{sign_message, SecretKey};

use crate::client::{Client, ClientError, ClientResult, REQUEST_TIMEOUT};

/// The channel module the relay serves (its games only).
pub const RELAY_MODULE: &str = "channel";
/// How far a hello's time may be from the node's clock (node policy), ms.
pub const HELLO_SKEW_MS: u64 = 60_000;

/// The text a relay hello signs, lines joined by `\n`, no trailing newline:
///
/// ```text
/// gamechain relay hello v1
/// chain: <genesis hash, hex, as the channel's view {} returns it>
/// module: channel
/// game: <game id>
/// seat: <0 or 1>
/// time_ms: <the client's clock, ms since the Unix epoch, decimal>
/// ```
///
/// Signed as a Divi signed message (the scheme of moves) by that seat's game key (`signers[seat]`
/// of the game record). Its first line differs from every text the channel signs, so a hello
/// is never a move, a checkpoint or a settlement, and the chain and game make it worthless
/// elsewhere.
pub fn hello_text(chain: &str, game: &str, seat: u8, time_ms: u64) -> String {
    format!(
        "gamechain relay hello v1\nchain: {chain}\nmodule: {RELAY_MODULE}\ngame: {game}\nseat: {seat}\ntime_ms: {time_ms}"
    )
}

/// A signed seat hello, sent in the upgrade request's query
/// (`?seat=<0|1>&time=<ms>&sig=<base64>`). The node takes it once, within
/// [`HELLO_SKEW_MS`] of its clock.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RelayHello {
    /// The seat the connection is (0 or 1).
    pub seat: u8,
    /// The time it was signed at, ms since the Unix epoch.
    pub time_ms: u64,
    /// The seat's game key's signature of [`hello_text`], base64.
    pub sig: String,
}

impl RelayHello {
    /// `key`'s hello for `seat` of `game` on the chain of genesis hash `chain`, at `time_ms`.
    pub fn sign(key: &SecretKey, chain: &str, game: &str, seat: u8, time_ms: u64) -> RelayHello {
        RelayHello {
            seat,
            time_ms,
            sig: sign_message(key, hello_text(chain, game, seat, time_ms)),
        }
    }
}

/// A seat of a game, able to sign a fresh hello whenever it connects: the chain's genesis hash
/// (the channel's view `{}`: `chain`), the seat, and its game key.
#[derive(Debug, Clone)]
pub struct RelaySeat {
    /// The chain's genesis hash, hex.
    pub chain: String,
    /// The seat, 0 or 1.
    pub seat: u8,
    /// The seat's game key (`signers[seat]` of the game record).
    pub key: SecretKey,
}

impl RelaySeat {
    /// A hello for `game` signed now (the system clock). The node takes a hello once, and
    /// signatures are deterministic, so no two hellos of this process share a time: one asked
    /// in the same millisecond as the last takes the next.
    pub fn hello(&self, game: &str) -> RelayHello {
        static LAST: AtomicU64 = AtomicU64::new(0);
        let now = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as u64);
        let last = LAST.fetch_max(now, Ordering::Relaxed);
        let time = if last >= now {
            LAST.fetch_add(1, Ordering::Relaxed) + 1
        } else {
            now
        };
        RelayHello::sign(&self.key, &self.chain, game, self.seat, time)
    }
}

/// A signed move as it travels: `{"n", "data": "<hex>", "sig": "<base64>"}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
pub struct RelayMove {
    /// The move number.
    pub n: u64,
    /// The move data, lowercase hex.
    pub data: String,
    /// The mover's game key's signature of the move text, base64.
    pub sig: String,
}

/// What the relay sends a connection.
#[derive(Debug, Clone, PartialEq, Eq, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
pub enum RelayEvent {
    /// A move a connection of the other seat sent, checked by the node.
    Move {
        /// The game.
        game: String,
        /// The seat whose game key signed it.
        seat: u8,
        /// The move.
        #[serde(rename = "move")]
        mv: RelayMove,
        /// The state hash before it, as its sender said (the signature covers it).
        prev: String,
    },
    /// This connection's move went to `to` connections of the other seat.
    Relayed {
        /// Its move number.
        n: u64,
        /// The seat whose key signed it.
        seat: u8,
        /// How many connections of the other seat got it (0: the opponent did not; use the
        /// move board).
        to: u64,
    },
    /// The number of the other seat's connections (the opponent's clients) changed, and once on
    /// connecting.
    Peers {
        /// The other seat's connections now.
        count: u64,
    },
    /// This connection's last message was refused.
    Error {
        /// `bad_json`, `bad_signature` or `rate_limited`.
        error: String,
        /// Why.
        message: String,
    },
    /// The answer to a text `ping`.
    Pong,
}

type Ws =
    tokio_tungstenite::WebSocketStream<tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>>;

/// One relay connection (see the module docs).
pub struct Relay {
    ws: Ws,
    closed: Option<(u16, String)>,
}

impl Client {
    /// Opens the move relay of channel game `game` as `seat`, with a hello signed now.
    /// Errors: [`ClientError::Api`] when the node refuses the upgrade (`bad_hello` for a key that
    /// is not the seat's or a clock over a minute off the node's, `not_found` for an unknown
    /// game, `too_many_subscribers`), [`ClientError::Transport`] when it cannot be reached.
    pub async fn relay(&self, game: &str, seat: &RelaySeat) -> ClientResult<Relay> {
        self.relay_with(game, Some(&seat.hello(game))).await
    }

    /// [`Client::relay`] with a hello made elsewhere (another signer; tests: none at all is
    /// `hello_required`).
    pub async fn relay_with(&self, game: &str, hello: Option<&RelayHello>) -> ClientResult<Relay> {
        let url = self.relay_url(game, hello);
        // Errors name the URL without the hello.
        let shown = self.url(&["v1", "relay", game]);
        let connect = tokio_tungstenite::connect_async(url.as_str());
        let result = tokio::time::timeout(REQUEST_TIMEOUT, connect)
            .await
            .map_err(|_| {
                ClientError::Transport(format!(
                    "{shown}: no WebSocket upgrade in {REQUEST_TIMEOUT:?}"
                ))
            })?;
        match result {
            Ok((ws, _)) => Ok(Relay { ws, closed: None }),
            Err(tokio_tungstenite::tungstenite::Error::Http(response)) => {
                let status = response.status().as_u16();
                let body = response
                    .body()
                    .as_ref()
                    .map(|b| b.to_vec())
                    .unwrap_or_default();
                Err(crate::client::decode_error(status, &body))
            }
            Err(e) => Err(ClientError::Transport(format!("{shown}: {e}"))),
        }
    }
}

impl Client {
    /// The upgrade URL: `ws(s)://…/v1/relay/<game>?seat=…&time=…&sig=…` (percent-encoded: a
    /// base64 `+` is `%2B`).
    fn relay_url(&self, game: &str, hello: Option<&RelayHello>) -> reqwest::Url {
        let mut url = self.url(&["v1", "relay", game]);
        let ws = if url.scheme() == "https" { "wss" } else { "ws" };
        url.set_scheme(ws).expect("http URLs can become ws URLs");
        if let Some(h) = hello {
            url.query_pairs_mut()
                .append_pair("seat", &h.seat.to_string())
                .append_pair("time", &h.time_ms.to_string())
                .append_pair("sig", &h.sig);
        }
        url
    }
}

impl Relay {
    /// Sends `mv`, whose state before it hashes to `prev` (64 hex). The node answers with a
    /// [`RelayEvent::Relayed`] or [`RelayEvent::Error`] among the events [`Relay::next`]
    /// returns. Errors: [`ClientError::Transport`].
    pub async fn send(&mut self, mv: &RelayMove, prev: &str) -> ClientResult<()> {
        let text = serde_json::json!({"move": mv, "prev": prev}).to_string();
        tokio::time::timeout(REQUEST_TIMEOUT, self.ws.send(Message::text(text)))
            .await
            .map_err(|_| ClientError::Transport("the relay did not take the move in time".into()))?
            .map_err(|e| ClientError::Transport(e.to_string()))
    }

    /// The next event; `Ok(None)` once the node closed the connection
    /// ([`Relay::close_reason`]). Errors: [`ClientError::Transport`] (connection lost),
    /// [`ClientError::Protocol`] (a message this client does not know).
    pub async fn next(&mut self) -> ClientResult<Option<RelayEvent>> {
        loop {
            if self.closed.is_some() {
                return Ok(None);
            }
            let message = match self.ws.next().await {
                None => {
                    self.closed = Some((1006, "connection closed without a close frame".into()));
                    continue;
                }
                Some(m) => m.map_err(|e| ClientError::Transport(e.to_string()))?,
            };
            match message {
                Message::Text(text) => {
                    return serde_json::from_str(text.as_str()).map(Some).map_err(|e| {
                        ClientError::Protocol {
                            status: 101,
                            message: format!("not a relay message: {e}"),
                        }
                    })
                }
                Message::Close(frame) => {
                    let (code, reason) = frame
                        .map(|f| (u16::from(f.code), f.reason.to_string()))
                        .unwrap_or((1005, String::new()));
                    self.closed = Some((code, reason));
                }
                _ => {}
            }
        }
    }

    /// [`Relay::next`] within `timeout` (`Ok(None)` also when nothing came in time).
    pub async fn next_within(&mut self, timeout: Duration) -> ClientResult<Option<RelayEvent>> {
        match tokio::time::timeout(timeout, self.next()).await {
            Ok(r) => r,
            Err(_) => Ok(None),
        }
    }

    /// Sends `text` as it is (tests of the node's checks).
    pub async fn send_raw(&mut self, text: &str) -> ClientResult<()> {
        self.ws
            .send(Message::text(text.to_string()))
            .await
            .map_err(|e| ClientError::Transport(e.to_string()))
    }

    /// Why the node closed the connection (close code and reason), once it has: 4002 when a
    /// newer connection of the same seat took its place (a seat holds at most 4), 4001 when it
    /// did not read, 1001 at the node's shutdown.
    pub fn close_reason(&self) -> Option<(u16, &str)> {
        self.closed.as_ref().map(|(c, r)| (*c, r.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The hello's text and signature for a fixed key (the Divi testnet vector of
    /// `gamechain-chain`'s `signed_message.rs`): the JS SDK's `test/vectors.test.js` checks the
    /// same bytes.
    #[test]
    fn hello_vector() {
        let key =
            SecretKey::from_wif("cPyzSehsdPeYU2aqFJ7jhvGmJBiciscQKdVMWkxhhK9pTLQVf7pU").unwrap();
        let chain = "ab".repeat(32);
        let text = hello_text(&chain, "0000000000000007", 1, 1_700_000_000_123);
        assert_eq!(
            text,
            format!(
                "gamechain relay hello v1\nchain: {chain}\nmodule: channel\ngame: 0000000000000007\nseat: 1\ntime_ms: 1700000000123"
            )
        );
        let hello = RelayHello::sign(&key, &chain, "0000000000000007", 1, 1_700_000_000_123);
        assert_eq!(hello.sig, "H+/YuQWsuBCS2ch5rP2rgNTadC7jKrpOeYyrxxtLdXjbeKchtTGlVDU93pIlJ0GkgnwAMB49uZcE7hE5bgiy3/A=");
        gamechain_chain::verify_message(&key.address(), &text, &hello.sig).unwrap();
        let url = Client::new("http://127.0.0.1:8645/")
            .unwrap()
            .relay_url("0000000000000007", Some(&hello));
        assert_eq!(
            url.as_str(),
            "ws://127.0.0.1:8645/v1/relay/0000000000000007?seat=1&time=1700000000123&sig=H%2B%2FYuQWsuBCS2ch5rP2rgNTadC7jKrpOeYyrxxtLdXjbeKchtTGlVDU93pIlJ0GkgnwAMB49uZcE7hE5bgiy3%2FA%3D"
        );
    }

    #[test]
    fn no_two_hellos_of_a_process_share_a_time() {
        let seat = RelaySeat {
            chain: "ab".repeat(32),
            seat: 0,
            key: SecretKey::generate(gamechain_chain::Network::Testnet),
        };
        let hellos: Vec<RelayHello> = (0..50).map(|_| seat.hello("0000000000000001")).collect();
        for w in hellos.windows(2) {
            assert!(w[1].time_ms > w[0].time_ms);
            assert_ne!(w[1].sig, w[0].sig);
        }
    }

    #[test]
    fn every_relay_message_decodes() {
        let m: RelayEvent = serde_json::from_str(
            r#"{"type":"move","game":"0000000000000001","seat":1,"move":{"n":3,"data":"04","sig":"c2ln"},"prev":"ab"}"#,
        )
        .unwrap();
        assert_eq!(
            m,
            RelayEvent::Move {
                game: "0000000000000001".into(),
                seat: 1,
                mv: RelayMove {
                    n: 3,
                    data: "04".into(),
                    sig: "c2ln".into()
                },
                prev: "ab".into()
            }
        );
        for text in [
            r#"{"type":"relayed","n":3,"seat":0,"to":1}"#,
            r#"{"type":"peers","count":0}"#,
            r#"{"type":"error","error":"bad_signature","message":"x"}"#,
            r#"{"type":"pong"}"#,
        ] {
            serde_json::from_str::<RelayEvent>(text).unwrap();
        }
    }
}
