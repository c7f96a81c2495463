//! The bytes of large transcript answers being sent, and their deadline. A kept answer is shared
//! (`Bytes`), but every head makes a new one of an unfinished game, and a client that stops
//! reading holds the version it was given for as long as its connection lives. So each large
//! answer in flight is counted until its body is sent or dropped: at most
//! [`MAX_SENDING_BYTES`] node-wide (more: `503 busy`, `retry-after: 1`) and
//! [`MAX_SENDING_BYTES_PER_NETWORK`] per client network (more: `429 rate_limited`), and its
//! sending is cut after [`SEND_DEADLINE`] (the client sees a body shorter than its
//! `content-length`). Answers of at most [`SMALL_ANSWER_BYTES`] are not counted: they are what
//! most games' transcripts are, and they are bounded by the connections themselves.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use axum::body::Body;
use bytes::Bytes;
use futures_util::StreamExt as _;

/// Answers up to this size are sent without being counted.
pub const SMALL_ANSWER_BYTES: usize = 256 << 10;
/// Bytes of counted answers being sent at once, node-wide.
pub const MAX_SENDING_BYTES: usize = 256 << 20;
/// Bytes of counted answers being sent at once to one client network (`budget::network`).
pub const MAX_SENDING_BYTES_PER_NETWORK: usize = 32 << 20;
/// Longest the sending of one answer may take (16 MiB, the largest transcript, at 280 KB/s).
pub const SEND_DEADLINE: Duration = Duration::from_secs(60);
/// Piece of a body handed to the connection at a time.
const PIECE_BYTES: usize = 64 << 10;

/// Why an answer cannot be sent now.
#[derive(Debug, PartialEq, Eq)]
pub enum SendRefused {
    /// The node sends [`MAX_SENDING_BYTES`] already.
    Node,
    /// The client's network is sent [`MAX_SENDING_BYTES_PER_NETWORK`] already.
    Network,
}

/// The counted bytes in flight (see the module docs).
#[derive(Debug, Default)]
pub struct Sending {
    held: Mutex<(usize, HashMap<IpAddr, usize>)>,
}

/// One counted answer's bytes, given back when its body is dropped.
struct Held {
    sending: Arc<Sending>,
    network: IpAddr,
    bytes: usize,
}

impl Drop for Held {
    fn drop(&mut self) {
        let mut held = self.sending.held.lock().unwrap_or_else(|e| e.into_inner());
        held.0 -= self.bytes;
        if let Some(n) = held.1.get_mut(&self.network) {
            *n -= self.bytes;
            if *n == 0 {
                held.1.remove(&self.network);
            }
        }
    }
}

impl Sending {
    /// The body of `bytes` for a client of `network`: as it is when small, else counted until
    /// it is sent or dropped and cut at [`SEND_DEADLINE`]. Errors: [`SendRefused`] when the
    /// bytes in flight, with these, would pass a bound.
    pub fn body(self: &Arc<Self>, network: IpAddr, bytes: Bytes) -> Result<Body, SendRefused> {
        let len = bytes.len();
        if len <= SMALL_ANSWER_BYTES {
            return Ok(Body::from(bytes));
        }
        let guard = {
            let mut held = self.held.lock().unwrap_or_else(|e| e.into_inner());
            if held.0 + len > MAX_SENDING_BYTES {
                return Err(SendRefused::Node);
            }
            let mine = held.1.get(&network).copied().unwrap_or(0);
            if mine + len > MAX_SENDING_BYTES_PER_NETWORK {
                return Err(SendRefused::Network);
            }
            held.0 += len;
            *held.1.entry(network).or_insert(0) += len;
            Held {
                sending: self.clone(),
                network,
                bytes: len,
            }
        };
        let pieces = (0..len)
            .step_by(PIECE_BYTES)
            .map(move |at| Ok::<_, std::io::Error>(bytes.slice(at..(at + PIECE_BYTES).min(len))));
        Ok(Body::from_stream(
            futures_util::stream::iter(pieces)
                .take_until(tokio::time::sleep(SEND_DEADLINE))
                .map(move |piece| {
                    let _held = &guard;
                    piece
                }),
        ))
    }

    /// Bytes counted now, node-wide.
    pub fn in_flight(&self) -> usize {
        self.held.lock().unwrap_or_else(|e| e.into_inner()).0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn large_answers_are_counted_until_dropped_and_bounded() {
        let s = Arc::new(Sending::default());
        let a: IpAddr = "10.0.0.1".parse().unwrap();
        let b: IpAddr = "10.0.1.1".parse().unwrap();
        // Small: not counted.
        let small = s.body(a, Bytes::from(vec![1; SMALL_ANSWER_BYTES])).unwrap();
        assert_eq!(s.in_flight(), 0);
        drop(small);
        // Large: counted while the body lives, whole when read.
        let big = Bytes::from(vec![7; 10 << 20]);
        let body = s.body(a, big.clone()).unwrap();
        assert_eq!(s.in_flight(), 10 << 20);
        let read = axum::body::to_bytes(body, usize::MAX).await.unwrap();
        assert_eq!(read, big);
        assert_eq!(s.in_flight(), 0);
        // One network: at most its share.
        let held: Vec<_> = (0..3).map(|_| s.body(a, big.clone()).unwrap()).collect();
        assert_eq!(s.body(a, big.clone()).err(), Some(SendRefused::Network));
        // Node-wide: at most the whole.
        let mut others = Vec::new();
        for i in 0..30u8 {
            let net: IpAddr = format!("10.{i}.9.1").parse().unwrap();
            match s.body(net, big.clone()) {
                Ok(b) => others.push(b),
                Err(e) => {
                    assert_eq!(e, SendRefused::Node);
                    break;
                }
            }
        }
        assert!(s.in_flight() <= MAX_SENDING_BYTES);
        assert_eq!(s.body(b, big.clone()).err(), Some(SendRefused::Node));
        drop(held);
        drop(others);
        assert_eq!(s.in_flight(), 0);
        assert!(s.body(b, big).is_ok());
    }
}
