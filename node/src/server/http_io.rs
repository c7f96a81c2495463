//! The connections the API serves on: a [`JsonListener`] around the TCP listener whose
//! connections ([`JsonErrorsIo`]) turn hyper's own answers into the API's JSON errors.
//!
//! hyper answers some requests before axum (and so any handler or layer) sees them: a request
//! line whose URI is over 65,534 bytes (`414`), a header section over hyper's read buffer
//! (about 400 KiB) or with more than 100 headers (`431`), and a request it cannot parse at
//! all (`400`). Those answers have an empty body. No configuration makes hyper call us for
//! them, so the connection rewrites them on their way out: a response hyper writes that starts
//! with `HTTP/1.1 400`, `414` or `431` and has `content-length: 0` (our own answers with those
//! statuses always carry a JSON body, so they never match) is replaced by the same status with
//! `{"error": {"code", "message"}}` and `connection: close` (hyper closes the connection after
//! such an answer anyway).
//!
//! At most `max_connections` connections are open at once ([`ConnectionLimit`]): one accepted
//! above it is answered `503 too_many_connections` (JSON, written at once without reading the
//! request, best effort) and closed.
//!
//! Every accepted socket has `TCP_NODELAY` set (WebSocket subscriptions included).
//!
//! A connection upgraded to a WebSocket gets a fixed kernel send buffer of
//! [`WS_SOCKET_SEND_BUFFER_BYTES`] (`SO_SNDBUF`, which also stops the kernel growing it). Left
//! to autotuning, the send buffer of a subscriber that never reads grows to `tcp_wmem`'s
//! maximum (4 MiB on Linux): 2,000 such subscribers then hold more than the kernel's TCP
//! memory limit (`tcp_mem`, about 2 GiB on a 24 GiB machine), and the kernel resets every TCP
//! connection of the machine, the node's honest clients included. With the bound, subscribers
//! hold at most `max_ws_subscribers` × 2 × [`WS_SOCKET_SEND_BUFFER_BYTES`] of kernel memory
//! (Linux doubles the value for its bookkeeping): 256 MiB at the default 1,000.
//!
//! A connection the node has not written to for `idle` (config `idle_timeout_secs`) is closed
//! on its next read: a request head that never completes (a slow-loris client trickling bytes;
//! reads do not count, only the node's answers do), or an idle keep-alive connection. Every
//! request is answered within `api::REQUEST_TIMEOUT`, which is shorter. A connection upgraded
//! to a WebSocket (`101`) is exempt: subscribers only read, and blocks may be an hour apart.

use std::future::Future;
use std::io;
use std::net::SocketAddr;
use std::pin::Pin;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::task::{ready, Context, Poll};
use std::time::Duration;

use axum::extract::connect_info::Connected;
use axum::serve::{IncomingStream, Listener};
use gamechain_chain::wire::{ErrorAnswer, ErrorBody};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::time::{Instant, Sleep};

/// The kernel send buffer (`SO_SNDBUF`) of a connection upgraded to a WebSocket: 128 KiB,
/// enough for about 2.5 MB/s to a subscriber 100 ms away, far more than a chain's blocks need.
pub const WS_SOCKET_SEND_BUFFER_BYTES: usize = 128 << 10;

/// A socket whose kernel send buffer can be fixed (a connection upgraded to a WebSocket).
pub trait SendBuffer {
    /// Sets `SO_SNDBUF` to `bytes`. Errors: the kernel's.
    fn set_send_buffer(&self, bytes: usize) -> io::Result<()>;
}

impl SendBuffer for TcpStream {
    fn set_send_buffer(&self, bytes: usize) -> io::Result<()> {
        socket2::SockRef::from(self).set_send_buffer_size(bytes)
    }
}

/// The TCP listener of the API, handing out [`JsonErrorsIo`] connections that close after
/// `idle` without a write (`None`: never).
pub struct JsonListener {
    /// The bound listener.
    pub listener: TcpListener,
    /// The connections' idle limit.
    pub idle: Option<Duration>,
    /// The open-connection count and its bound (`None`: unlimited, uncounted).
    pub limit: Option<ConnectionLimit>,
}

/// The API's open connections (shared with `/v1/status` and `/metrics`) and how many may be
/// open at once (`max_connections`).
#[derive(Debug, Clone)]
pub struct ConnectionLimit {
    /// Connections open now.
    pub open: Arc<AtomicUsize>,
    /// The most that may be.
    pub max: usize,
}

/// One counted connection: uncounted when dropped (the connection closed).
#[derive(Debug)]
pub struct Counted(Arc<AtomicUsize>);

impl Drop for Counted {
    fn drop(&mut self) {
        self.0.fetch_sub(1, Ordering::Relaxed);
    }
}

/// The answer to a connection over `max_connections`.
fn over_limit_answer(max: usize) -> Vec<u8> {
    let body = serde_json::to_vec(&ErrorAnswer {
        error: ErrorBody {
            code: "too_many_connections".into(),
            message: format!(
                "the node has {max} connections open already (max_connections); retry later"
            ),
        },
    })
    .expect("an error answer serialises");
    let mut out = format!(
        "HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(&body);
    out
}

impl Listener for JsonListener {
    type Io = JsonErrorsIo<TcpStream>;
    type Addr = SocketAddr;

    async fn accept(&mut self) -> (Self::Io, Self::Addr) {
        loop {
            let (io, addr) = Listener::accept(&mut self.listener).await;
            let counted = match &self.limit {
                None => None,
                Some(limit) => {
                    if limit.open.fetch_add(1, Ordering::Relaxed) >= limit.max {
                        limit.open.fetch_sub(1, Ordering::Relaxed);
                        // Best effort, never waiting: the socket's buffer takes it or not.
                        let _ = io.try_write(&over_limit_answer(limit.max));
                        tracing::debug!(%addr, "refusing a connection over max_connections");
                        continue;
                    }
                    Some(Counted(limit.open.clone()))
                }
            };
            // Answers and WebSocket pushes are small writes: never hold one back for Nagle's
            // algorithm (a client's delayed ACK would add up to ~40 ms to it).
            if let Err(e) = io.set_nodelay(true) {
                tracing::debug!(%addr, "cannot set TCP_NODELAY: {e}");
            }
            let mut io = JsonErrorsIo::new(io, self.idle);
            io.counted = counted;
            return (io, addr);
        }
    }

    fn local_addr(&self) -> io::Result<Self::Addr> {
        Listener::local_addr(&self.listener)
    }
}

/// The peer address of a [`JsonListener`] connection (axum's connect info); `api::serve`
/// hands it on to the layers as `ConnectInfo<SocketAddr>`.
#[derive(Debug, Clone, Copy)]
pub struct PeerAddr(pub SocketAddr);

impl Connected<IncomingStream<'_, JsonListener>> for PeerAddr {
    fn connect_info(stream: IncomingStream<'_, JsonListener>) -> Self {
        PeerAddr(*stream.remote_addr())
    }
}

/// A connection whose hyper-made error answers (`400`, `414`, `431` with an empty body) are
/// rewritten to the API's JSON; every other byte passes through unchanged. A read after
/// `idle` without a write fails (`TimedOut`), so hyper closes the connection.
pub struct JsonErrorsIo<T> {
    inner: T,
    /// A rewritten answer not yet fully written, and how much of it has been.
    out: Vec<u8>,
    sent: usize,
    /// The idle limit, and when it runs out (`None` once upgraded to a WebSocket).
    idle: Option<Duration>,
    deadline: Option<Pin<Box<Sleep>>>,
    /// Its place in the open-connection count, given back on drop.
    counted: Option<Counted>,
    /// A `101` was written: the socket's send buffer is to be fixed.
    upgraded: bool,
}

impl<T> JsonErrorsIo<T> {
    /// Wraps `inner`; `idle`: see [`JsonErrorsIo`] (`None`: no limit). Call it inside a tokio
    /// runtime (the idle timer).
    pub fn new(inner: T, idle: Option<Duration>) -> Self {
        JsonErrorsIo {
            inner,
            out: Vec::new(),
            sent: 0,
            idle,
            deadline: idle.map(|d| Box::pin(tokio::time::sleep(d))),
            counted: None,
            upgraded: false,
        }
    }

    /// The node wrote `buf`: the idle limit starts again, and ends for good at a `101`.
    fn wrote(&mut self, buf: &[u8]) {
        if buf.starts_with(b"HTTP/1.1 101 ") {
            self.deadline = None;
            self.upgraded = true;
        } else if let (Some(deadline), Some(idle)) = (&mut self.deadline, self.idle) {
            deadline.as_mut().reset(Instant::now() + idle);
        }
    }
}

impl<T: AsyncWrite + Unpin> JsonErrorsIo<T> {
    /// Writes what is left of a rewritten answer.
    fn drain(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        while self.sent < self.out.len() {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &self.out[self.sent..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            self.sent += n;
        }
        self.out.clear();
        self.sent = 0;
        Poll::Ready(Ok(()))
    }
}

/// The JSON answer replacing hyper's bare answer `head`, or `None` when `head` is not one.
pub fn rewrite(head: &[u8]) -> Option<Vec<u8>> {
    let (status, reason, code, message) = if head.starts_with(b"HTTP/1.1 414 ") {
        (
            414,
            "URI Too Long",
            "too_large",
            "the request's URI is more than 65534 bytes",
        )
    } else if head.starts_with(b"HTTP/1.1 431 ") {
        (
            431,
            "Request Header Fields Too Large",
            "too_large",
            "the request's header section is more than the node reads (about 400 KiB, or 100 headers)",
        )
    } else if head.starts_with(b"HTTP/1.1 400 ") {
        (
            400,
            "Bad Request",
            "invalid",
            "the request is not HTTP/1.1 the node can read",
        )
    } else {
        return None;
    };
    let end = head.windows(4).position(|w| w == b"\r\n\r\n")?;
    if end + 4 != head.len() {
        return None;
    }
    let text = std::str::from_utf8(&head[..end]).ok()?.to_ascii_lowercase();
    if !text.split("\r\n").any(|line| line == "content-length: 0") {
        return None;
    }
    let body = serde_json::to_vec(&ErrorAnswer {
        error: ErrorBody {
            code: code.to_string(),
            message: message.to_string(),
        },
    })
    .ok()?;
    let mut out = format!(
        "HTTP/1.1 {status} {reason}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n",
        body.len()
    )
    .into_bytes();
    out.extend_from_slice(&body);
    Some(out)
}

impl<T: AsyncRead + Unpin> AsyncRead for JsonErrorsIo<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        if let Some(deadline) = &mut self.deadline {
            if deadline.as_mut().poll(cx).is_ready() {
                return Poll::Ready(Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    "the connection was idle too long",
                )));
            }
        }
        Pin::new(&mut self.inner).poll_read(cx, buf)
    }
}

impl<T: AsyncWrite + SendBuffer + Unpin> AsyncWrite for JsonErrorsIo<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        ready!(this.drain(cx))?;
        if let Some(answer) = rewrite(buf) {
            this.wrote(&answer);
            this.out = answer;
            this.sent = 0;
            // The rest goes out on the next write, flush or shutdown.
            if let Poll::Ready(Err(e)) = this.drain(cx) {
                return Poll::Ready(Err(e));
            }
            return Poll::Ready(Ok(buf.len()));
        }
        let written = ready!(Pin::new(&mut this.inner).poll_write(cx, buf))?;
        if written > 0 {
            this.wrote(buf);
            if std::mem::take(&mut this.upgraded) {
                if let Err(e) = this.inner.set_send_buffer(WS_SOCKET_SEND_BUFFER_BYTES) {
                    tracing::debug!("cannot fix a WebSocket's send buffer: {e}");
                }
            }
        }
        Poll::Ready(Ok(written))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.drain(cx))?;
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        ready!(self.drain(cx))?;
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }

    /// `false`: hyper then writes each response head in one buffer, which [`rewrite`] reads.
    fn is_write_vectored(&self) -> bool {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_hypers_bare_answers_are_rewritten() {
        let bare =
            b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\ndate: x\r\n\r\n";
        let out = String::from_utf8(rewrite(bare).unwrap()).unwrap();
        assert!(out.starts_with("HTTP/1.1 431 "), "{out}");
        let body: serde_json::Value =
            serde_json::from_str(out.split("\r\n\r\n").nth(1).unwrap()).unwrap();
        assert_eq!(body["error"]["code"], "too_large");
        assert!(rewrite(b"HTTP/1.1 414 URI Too Long\r\ncontent-length: 0\r\n\r\n").is_some());
        // Our own 400 (a JSON body), a 200, a head followed by body bytes: untouched.
        assert!(rewrite(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 20\r\n\r\n").is_none());
        assert!(rewrite(b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n").is_none());
        assert!(rewrite(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n{}").is_none());
    }
}
