//! [`Relay`]: one connection to a node's move relay (`GET /v1/relay/<game>`, `node/API.md`,
//! "Move relay"): send a signed channel move to the other player at once, off-chain, and
//! receive theirs. The node checks each move's signature and seat and stores nothing; a move
//! nobody was connected to receive (`to: 0`) is lost there, so callers fall back to the move
//! board.

use std::time::Duration;

use futures_util::{SinkExt, StreamExt};
use serde::{Deserialize, Serialize};
use tokio_tungstenite::tungstenite::Message;

use crate::client::{Client, ClientError, ClientResult, REQUEST_TIMEOUT};

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
    /// A move another connection of the game sent, checked by the node.
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
    /// This connection's move went to `to` other connections.
    Relayed {
        /// Its move number.
        n: u64,
        /// The seat whose key signed it.
        seat: u8,
        /// How many other connections got it (0: nobody; use the move board).
        to: u64,
    },
    /// The number of other connections of the game changed (and once on connecting).
    Peers {
        /// Other connections now.
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

type Ws = tokio_tungstenite::WebSocketStream<
    tokio_tungstenite::MaybeTlsStream<tokio::net::TcpStream>,
>;

/// One relay connection (see the module docs).
pub struct Relay {
    ws: Ws,
    closed: Option<(u16, String)>,
}

impl Client {
    /// Opens the move relay of channel game `game`. Errors: [`ClientError::Api`] when the node
    /// refuses the upgrade (`not_found` for an unknown game, `relay_full`,
    /// `too_many_subscribers`), [`ClientError::Transport`] when it cannot be reached.
    pub async fn relay(&self, game: &str) -> ClientResult<Relay> {
        let mut url = self.url(&["v1", "relay", game]);
        url.set_scheme("ws").expect("http URLs can become ws URLs");
        let connect = tokio_tungstenite::connect_async(url.as_str());
        let result = tokio::time::timeout(REQUEST_TIMEOUT, connect)
            .await
            .map_err(|_| {
                ClientError::Transport(format!(
                    "{url}: no WebSocket upgrade in {REQUEST_TIMEOUT:?}"
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
            Err(e) => Err(ClientError::Transport(format!("{url}: {e}"))),
        }
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

    /// Why the node closed the connection (close code and reason), once it has.
    pub fn close_reason(&self) -> Option<(u16, &str)> {
        self.closed.as_ref().map(|(c, r)| (*c, r.as_str()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

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
